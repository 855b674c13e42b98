import { parse } from 'yaml';

/**
 * Reads the YAML frontmatter of an Agent Skill's SKILL.md: the block between a first line `---`
 * and the next line `---`. Pure and without I/O, so the discovery index and the installer read a
 * skill's name and description alike.
 */

/** An Agent Skill name: 1 to 64 of `[a-z0-9-]`, no leading, trailing or double hyphen. */
export const SKILL_NAME_PATTERN = /^(?!-)(?!.*--)[a-z0-9-]{1,64}(?<!-)$/;
export const SKILL_DESCRIPTION_MAX = 1024;

export interface SkillFrontmatter {
  name?: string;
  description?: string;
  /** Every member as parsed (license, compatibility, metadata, allowed-tools, ...). */
  fields: Record<string, unknown>;
}

/** The frontmatter of a SKILL.md, or undefined when it has none or it is not a YAML mapping. */
export function readFrontmatter(skillMd: string): SkillFrontmatter | undefined {
  const match = /^---\r?\n([\s\S]*?)\r?\n---(?:\r?\n|$)/.exec(skillMd);
  if (!match) return undefined;
  let fields: unknown;
  try {
    fields = parse(match[1] ?? '');
  } catch {
    return undefined;
  }
  if (typeof fields !== 'object' || fields === null || Array.isArray(fields)) return undefined;
  const record = fields as Record<string, unknown>;
  return {
    ...(typeof record.name === 'string' ? { name: record.name } : {}),
    ...(typeof record.description === 'string' ? { description: record.description } : {}),
    fields: record,
  };
}

/**
 * What the Agent Skills specification requires of a skill folder named `folder`: a SKILL.md whose
 * frontmatter names the folder and describes the skill. Empty when it complies.
 */
export function agentSkillProblems(folder: string, files: readonly { path: string; content: string }[]): string[] {
  const skillMd = files.find((f) => f.path === 'SKILL.md');
  if (!skillMd) return ['SKILL.md is missing'];
  const fm = readFrontmatter(skillMd.content);
  if (!fm) return ['SKILL.md has no YAML frontmatter'];
  const problems: string[] = [];
  if (fm.name === undefined) problems.push('frontmatter name is missing');
  else if (!SKILL_NAME_PATTERN.test(fm.name)) problems.push(`frontmatter name "${fm.name}" is not a valid skill name`);
  else if (fm.name !== folder) problems.push(`frontmatter name "${fm.name}" differs from the folder name "${folder}"`);
  if (!fm.description?.trim()) problems.push('frontmatter description is missing');
  else if (fm.description.length > SKILL_DESCRIPTION_MAX)
    problems.push(`frontmatter description is longer than ${SKILL_DESCRIPTION_MAX} characters`);
  return problems;
}
