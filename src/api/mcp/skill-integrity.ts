import { parse } from 'yaml';
import { fileDigests, skillDigest, type SkillFile } from '@skill-market/skill-protocol/skill-digest';

/** An Agent Skill name: 1 to 64 of `[a-z0-9-]`, no leading, trailing or double hyphen. */
const SKILL_NAME = /^(?!-)(?!.*--)[a-z0-9-]{1,64}(?<!-)$/;

/** The frontmatter of a SKILL.md (the YAML between its opening `---` lines), or undefined. */
export function frontmatterOf(skillMd: string | null | undefined): Record<string, unknown> | undefined {
  if (!skillMd) return undefined;
  const match = /^---\r?\n([\s\S]*?)\r?\n---(\r?\n|$)/.exec(skillMd);
  if (!match) return undefined;
  try {
    const parsed: unknown = parse(match[1] as string);
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The skill's name: the `name` of its SKILL.md frontmatter when it is a valid Agent Skill name,
 * otherwise one made from the title (lower case, other characters as hyphens), so every skill
 * has a folder name and a `skill://` URI.
 */
export function skillNameOf(skillMd: string | null | undefined, title: string): string {
  const name = frontmatterOf(skillMd)?.name;
  if (typeof name === 'string' && SKILL_NAME.test(name)) return name;
  const slug = title
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 64)
    .replace(/-+$/, '');
  return slug || 'skill';
}

/** The `description` of a SKILL.md frontmatter, when it has one. */
export function skillDescriptionOf(skillMd: string | null | undefined): string | undefined {
  const description = frontmatterOf(skillMd)?.description;
  return typeof description === 'string' ? description : undefined;
}

/** The seller's signature over a version, as the full view states it (`integrity.signature`). */
export type VersionSignature = {
  signer: string;
  value: string;
  scheme: 'eip712';
  typedData: Record<string, unknown>;
} | null;

/** What a full view of a skill holds that its integrity is computed from. */
export interface FullSkillView {
  id: string;
  title: string;
  version: number;
  versionLabel?: string;
  files?: SkillFile[];
  /** The integrity the full view states from the stored version: its name and the seller's signature. */
  integrity?: { name?: string; signature?: VersionSignature };
}

/**
 * The seller's signature of the version a full view shows: the one the view states, null for a
 * version the seller has not signed (or a view that states none).
 */
export function signatureOf(view: FullSkillView): VersionSignature {
  return view.integrity?.signature ?? null;
}

/**
 * The integrity of a delivered skill: each file's digest and the skill digest, computed here from
 * the very files delivered, with the name and the seller's signature of the stored version. A
 * buyer recomputes the digests from the files it received and checks the signature offline
 * (version-signature.ts).
 */
export function integrityOf(view: FullSkillView) {
  const files = view.files ?? [];
  const skillMd = files.find((f) => f.path === 'SKILL.md')?.content;
  return {
    name: view.integrity?.name ?? skillNameOf(skillMd, view.title),
    version: view.version,
    versionLabel: view.versionLabel ?? null,
    skillDigest: skillDigest(files),
    files: fileDigests(files).map(({ path, digest }) => ({ path, digest })),
    signature: signatureOf(view),
  };
}
