import { defineDocument, JSON_TYPE, type JsonSchema } from '../document.js';
import { EXAMPLE_SITE, EXAMPLE_TIME } from '../examples.js';
import { arrayOf, object, string } from '../schema-parts.js';
import {
  AGENT_SKILLS_DISCOVERY_SCHEMA,
  archiveUrl,
  type IndexedFile,
  SKILLS_INDEX_VERSION,
  semverOf,
} from './skills-index.renderer.js';

/**
 * Version pinning as agentskills/agentskills PR #380 proposes it, per skill: a marketplace has no
 * single release of all its skills, so each skill is a discovery root of its own,
 * `/.well-known/agent-skills/skills/{postId}/`, with
 *
 * - `versions.json`: `{latest, versions}`, every version of the skill as a semantic version
 *   (version n is `n.0.0`), oldest first; it changes when the seller adds a version;
 * - `v{n}.0.0/index.json`: an immutable snapshot, a discovery index (both formats) listing the skill
 *   exactly as version n was published: its name and description from that version's SKILL.md, its
 *   per-file and skill digests, and its archive. Nothing that changes later (price, rating, audit,
 *   a signature added afterwards) is in it.
 */

const digest: JsonSchema = { type: 'string', pattern: '^sha256:[0-9a-f]{64}$' };
const semver: JsonSchema = { type: 'string', pattern: '^(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)$' };
const archive: JsonSchema = object({ url: { type: 'string', format: 'uri', pattern: '\\.tar\\.gz$' }, digest });

export const SKILL_VERSIONS_PATH = '/.well-known/agent-skills/skills/{postId}/versions.json';
export const skillVersionsPath = (postId: string) => SKILL_VERSIONS_PATH.replace('{postId}', postId);
export const skillSnapshotPath = (postId: string, version: number) =>
  `/.well-known/agent-skills/skills/${postId}/v${semverOf(version)}/index.json`;

/** The schema of versions.json (PR #380's shape). */
export const skillVersionsSchema: JsonSchema = {
  ...object({ latest: semver, versions: { ...arrayOf(semver), minItems: 1, uniqueItems: true } }),
};

/** A skill's versions.json: the current version as `latest`, every version oldest first. */
export function renderSkillVersions(current: number) {
  return {
    latest: semverOf(current),
    versions: Array.from({ length: current }, (_, i) => semverOf(i + 1)),
  };
}

export interface SnapshotView {
  baseUrl: string;
  postId: string;
  version: number;
  versionLabel: string;
  name: string;
  description: string;
  skillDigest: string;
  files: readonly IndexedFile[];
  archiveDigest: string;
  createdAt: string;
}

/** The immutable index of one version of one skill. Pure. */
export function renderSkillSnapshot(v: SnapshotView) {
  const pkg = { url: archiveUrl(v.baseUrl, v.postId, v.version), digest: v.archiveDigest };
  return {
    $schema: AGENT_SKILLS_DISCOVERY_SCHEMA,
    version: SKILLS_INDEX_VERSION,
    market: v.baseUrl,
    skills: [
      {
        name: v.name,
        description: v.description,
        type: 'archive' as const,
        url: pkg.url,
        digest: pkg.digest,
        skillDigest: v.skillDigest,
        files: [...v.files.filter((f) => f.path === 'SKILL.md'), ...v.files.filter((f) => f.path !== 'SKILL.md')],
        package: pkg,
        id: v.postId,
        version: semverOf(v.version),
        versionNumber: v.version,
        versionLabel: v.versionLabel,
        createdAt: v.createdAt,
      },
    ],
  };
}

const schema: JsonSchema = object({
  $schema: { const: AGENT_SKILLS_DISCOVERY_SCHEMA },
  version: semver,
  market: { type: 'string', format: 'uri' },
  skills: {
    ...arrayOf(
      object({
        name: { type: 'string', pattern: '^(?!-)(?!.*--)[a-z0-9-]{1,64}(?<!-)$' },
        description: { type: 'string', minLength: 1, maxLength: 1024 },
        type: { const: 'archive' },
        url: { type: 'string', format: 'uri' },
        digest,
        skillDigest: digest,
        files: {
          ...arrayOf(object({ path: string, digest })),
          minItems: 1,
          contains: object({ path: { const: 'SKILL.md' } }),
        },
        package: archive,
        id: { type: 'string', format: 'uuid' },
        version: semver,
        versionNumber: { type: 'integer', minimum: 1 },
        versionLabel: string,
        createdAt: { type: 'string', format: 'date-time' },
      }),
    ),
    minItems: 1,
    maxItems: 1,
  },
});

const valid = renderSkillSnapshot({
  baseUrl: EXAMPLE_SITE.baseUrl,
  postId: '5f0c7a9e-1b2c-4d3e-8f90-a1b2c3d4e5f6',
  version: 2,
  versionLabel: '1.1.0',
  name: 'weather-report',
  description: 'Writes a weather report.',
  skillDigest: `sha256:${'a'.repeat(64)}`,
  files: [{ path: 'SKILL.md', digest: `sha256:${'b'.repeat(64)}` }],
  archiveDigest: `sha256:${'c'.repeat(64)}`,
  createdAt: EXAMPLE_TIME,
});
const [entry] = valid.skills;

/**
 * /.well-known/agent-skills/skills/{postId}/v{version}.0.0/index.json: one version of one skill,
 * published to the bucket the first time it is asked for and never rewritten (cached as long as a
 * manifest, so that a take-down reaches caches as fast).
 */
export const skillSnapshotDocument = defineDocument({
  id: 'AgentSkillSnapshot',
  path: '/.well-known/agent-skills/skills/{postId}/v{version}.0.0/index.json',
  contentType: JSON_TYPE,
  // Never rewritten, but a skill taken down leaves the caches as soon as its manifest does.
  cache: { maxAge: 60, staleWhileRevalidate: 600 },
  schema,
  examples: {
    valid: [valid],
    invalid: [
      { ...valid, $schema: undefined },
      { ...valid, skills: [{ ...entry, digest: 'sha256:abc' }] },
      { ...valid, skills: [{ ...entry, version: 2 }] },
      { ...valid, skills: [entry, entry] },
    ],
  },
  render: (view: SnapshotView) => renderSkillSnapshot(view),
});
