import { defineDocument, JSON_TYPE, type JsonSchema } from '../document.js';
import { EXAMPLE_SITE, EXAMPLE_TIME } from '../examples.js';
import { arrayOf, boolean, integer, nullable, object, string } from '../schema-parts.js';
import {
  AGENT_SKILLS_DISCOVERY_SCHEMA,
  archiveUrl,
  renderSkillsIndex,
  SKILLS_INDEX_PATH,
  SKILLS_INDEX_SHARD_PATH,
  SKILLS_INDEX_VERSION,
  type SkillsIndexView,
} from './skills-index.renderer.js';

const digest: JsonSchema = { type: 'string', pattern: '^sha256:[0-9a-f]{64}$' };
const address: JsonSchema = { type: 'string', pattern: '^0x[0-9a-fA-F]{40}$' };
// The RFC's path rules: relative, forward slashes, printable ASCII without \ ? # [ ], no `.` or
// `..` segment, no empty segment.
const filePath: JsonSchema = {
  type: 'string',
  pattern: '^(?!/)(?!.*//)(?!(.*/)?\\.\\.?(/|$))[\\x20-\\x7E]+$',
  not: { pattern: '[\\\\?#\\[\\]]|/$' },
};
const files: JsonSchema = {
  ...arrayOf(object({ path: filePath, digest })),
  minItems: 1,
  contains: object({ path: { const: 'SKILL.md' } }),
};
const signature: JsonSchema = nullable(object({ signer: address, value: string, scheme: { const: 'eip712' } }));
const audit: JsonSchema = object({
  verdict: { enum: ['pass', 'warn', 'fail', 'pending'] },
  counts: nullable(object({ fail: integer, warn: integer, info: integer })),
  overridden: boolean,
  report: { type: 'string', format: 'uri' },
});
const artifactUrl: JsonSchema = { type: 'string', format: 'uri', pattern: '\\.tar\\.gz$' };
const archive: JsonSchema = object({ url: artifactUrl, digest });
const version = object(
  {
    version: { type: 'integer', minimum: 1 },
    versionLabel: string,
    digest,
    files,
    package: archive,
    signature,
    audit,
    createdAt: { type: 'string', format: 'date-time' },
  },
  ['package'],
);
const semver: JsonSchema = { type: 'string', pattern: '^(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)$' };

/**
 * The members of the index (`draft`: also the Agent Skills discovery draft's `$schema`, and each
 * skill's `type` and `url`, `digest` being its archive's) or of a shard (the RFC's form).
 */
const indexMembers = (draft: boolean) => ({
  ...(draft ? { $schema: { const: AGENT_SKILLS_DISCOVERY_SCHEMA } } : {}),
  version: semver,
  market: { type: 'string', format: 'uri' },
  skills: arrayOf(
    object(
      {
        name: { type: 'string', pattern: '^(?!-)(?!.*--)[a-z0-9-]{1,64}(?<!-)$' },
        description: { type: 'string', minLength: 1, maxLength: 1024 },
        ...(draft ? { type: { const: 'archive' }, url: artifactUrl } : {}),
        digest,
        skillDigest: digest,
        files,
        package: archive,
        id: { type: 'string', format: 'uuid' },
        title: string,
        version: semver,
        versionNumber: { type: 'integer', minimum: 1 },
        versionLabel: string,
        signature,
        audit,
        rating: object({
          count: integer,
          mean: { type: ['number', 'null'] },
          adjusted: { type: ['number', 'null'] },
          reviews: { type: 'string', format: 'uri' },
        }),
        seller: object({ handle: string, walletAddress: address }),
        price: object({
          amount: { type: 'string', pattern: '^[0-9]+$' },
          asset: address,
          decimals: integer,
          network: string,
          free: boolean,
        }),
        links: object({
          preview: { type: 'string', format: 'uri' },
          full: { type: 'string', format: 'uri' },
          manifest: { type: 'string', format: 'uri' },
        }),
        versions: { ...arrayOf(version), minItems: 1 },
        updatedAt: { type: 'string', format: 'date-time' },
      },
      draft ? ['rating'] : ['rating', 'package'],
    ),
  ),
});

/** The index: the most bought skills inline, how many are published, and every shard's URL. */
const schema: JsonSchema = object({
  ...indexMembers(true),
  total: { type: 'integer', minimum: 0 },
  shards: { ...arrayOf({ type: 'string', format: 'uri' }), minItems: 256, maxItems: 256 },
});
/** A shard: every published skill whose id starts with its two hex digits, in the index's form. */
const shardSchema: JsonSchema = object({ ...indexMembers(false), shard: { type: 'string', pattern: '^[0-9a-f]{2}$' } });

const hex = (c: string) => c.repeat(64);
const exampleId = '5f0c7a9e-1b2c-4d3e-8f90-a1b2c3d4e5f6';
const current = {
  version: 2,
  versionLabel: '1.1.0',
  digest: `sha256:${hex('a')}`,
  files: [
    { path: 'SKILL.md', digest: `sha256:${hex('b')}` },
    { path: 'references/units.md', digest: `sha256:${hex('c')}` },
  ],
  signature: {
    signer: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
    value: `0x${'1'.repeat(130)}`,
    scheme: 'eip712' as const,
  },
  createdAt: EXAMPLE_TIME,
  audit: {
    verdict: 'pass' as const,
    counts: { fail: 0, warn: 0, info: 1 },
    overridden: false,
    report: `${EXAMPLE_SITE.baseUrl}/api/posts/${exampleId}/versions/2/audit.json`,
  },
  archive: { url: archiveUrl(EXAMPLE_SITE.baseUrl, exampleId, 2), digest: `sha256:${hex('e')}` },
};
const example: SkillsIndexView = {
  baseUrl: EXAMPLE_SITE.baseUrl,
  skills: [
    {
      id: '5f0c7a9e-1b2c-4d3e-8f90-a1b2c3d4e5f6',
      name: 'weather-report',
      description: 'Writes a weather report.',
      title: 'Weather report',
      seller: { handle: 'acme-extractor', walletAddress: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8' },
      price: { amount: '2500000', asset: EXAMPLE_SITE.usdcAddress, decimals: 6, network: 'eip155:84532', free: false },
      current,
      versions: [
        current,
        {
          ...current,
          version: 1,
          versionLabel: '1.0.0',
          files: [{ path: 'SKILL.md', digest: `sha256:${hex('d')}` }],
          archive: { url: archiveUrl(EXAMPLE_SITE.baseUrl, exampleId, 1), digest: `sha256:${hex('f')}` },
          signature: null,
        },
      ],
      updatedAt: EXAMPLE_TIME,
    },
  ],
};
const valid = renderSkillsIndex({ ...example, total: 1 });
const [skill] = valid.skills;
if (!skill) throw new Error('skills index example has no skill');
const withSkill = (patch: Record<string, unknown>) => ({ ...valid, skills: [{ ...skill, ...patch }] });

/**
 * /.well-known/agent-skills/index.json: the most bought published skills, how many are published,
 * and the URL of every shard, for installers and crawlers. The workers publish it again a few
 * seconds after skills are published, changed or unpublished.
 */
export const skillsIndexDocument = defineDocument({
  id: 'AgentSkillsIndex',
  path: SKILLS_INDEX_PATH,
  contentType: JSON_TYPE,
  cache: { maxAge: 30, staleWhileRevalidate: 300 },
  schema,
  examples: {
    valid: [valid, renderSkillsIndex({ baseUrl: EXAMPLE_SITE.baseUrl, skills: [], total: 0 })],
    invalid: [
      { ...valid, version: 'v0.2' },
      withSkill({ name: 'Weather Report' }),
      withSkill({ digest: 'sha256:abc' }),
      withSkill({ audit: { verdict: 'safe', counts: null, overridden: false, report: 'x' } }),
      withSkill({ files: [{ path: '../SKILL.md', digest: current.digest }] }),
      withSkill({ files: [{ path: 'references/units.md', digest: current.digest }] }),
      withSkill({ signature: { signer: 'me', value: '0x', scheme: 'eip712' } }),
      { ...valid, shards: valid.shards?.slice(1) },
      { ...valid, $schema: undefined },
      withSkill({ type: 'skill-md' }),
      withSkill({ url: undefined }),
      withSkill({ version: 2 }),
    ],
  },
  render: (view: SkillsIndexView) => renderSkillsIndex(view),
});

const shardExample = renderSkillsIndex({ ...example, shard: '5f' });

/**
 * /.well-known/agent-skills/shards/{shard}.json: every published skill whose id starts with the
 * shard's two hex digits, in the index's form. The workers publish a shard again when one of its
 * skills is published, changed or unpublished.
 */
export const skillsIndexShardDocument = defineDocument({
  id: 'AgentSkillsIndexShard',
  path: SKILLS_INDEX_SHARD_PATH,
  contentType: JSON_TYPE,
  cache: { maxAge: 30, staleWhileRevalidate: 300 },
  schema: shardSchema,
  examples: {
    valid: [shardExample, renderSkillsIndex({ baseUrl: EXAMPLE_SITE.baseUrl, skills: [], shard: 'ff' })],
    invalid: [
      { ...shardExample, shard: 'g0' },
      { ...shardExample, shard: undefined },
    ],
  },
  render: (view: SkillsIndexView) => renderSkillsIndex(view),
});

export { SKILLS_INDEX_VERSION };
