import { isMap, isScalar, parseDocument } from 'yaml';
import { AppError } from '../../platform/errors.js';
import type { SkillFile } from '@skill-market/skill-protocol/skill-digest';

/**
 * The Agent Skills format (agentskills.io specification): a folder whose `SKILL.md` starts with
 * YAML frontmatter between `---` lines, `name` (1 to 64 of a-z, 0-9 and single inner hyphens:
 * the folder the skill installs into) and `description` (1 to 1024 characters) required,
 * `license`, `compatibility` (1 to 500), `metadata` (string to string) and `allowed-tools` (a
 * space-separated string) optional, nothing else. Other files sit beside it (`scripts/`,
 * `references/`, `assets/` or anywhere below the folder). Every file is text.
 *
 * A file path must stay inside the folder on every system: relative, `/`-separated, no empty,
 * `.` or `..` segment, no backslash, colon, NUL or control character; and every path of a version
 * can be written beside the others (no file that is also a folder, no names equal but for case).
 */

export interface SkillProblem {
  /** Where: `body.files[2].path`, `SKILL.md`, `frontmatter.name`… */
  field: string;
  /** Which rule, a stable snake_case word clients may branch on. */
  rule: string;
  message: string;
}

export const SKILL_FILE = 'SKILL.md';
export const SKILL_NAME_PATTERN = /^[a-z0-9]+(-[a-z0-9]+)*$/;
const KNOWN_FIELDS = new Set(['name', 'description', 'license', 'compatibility', 'metadata', 'allowed-tools']);

/** 422 for files that are not a valid Agent Skill; `errors` names each field and rule. */
export class AgentSkillInvalidError extends AppError {
  constructor(
    code: 'agent_skill_invalid' | 'file_path_unsafe' | 'file_not_text',
    message: string,
    readonly errors: SkillProblem[],
  ) {
    super(422, code, `${message}: ${errors.map((e) => `${e.field} (${e.rule}): ${e.message}`).join('; ')}`, {
      errors,
    });
  }
}

/** Why a file path could leave the skill's folder (or be read differently elsewhere), if it could. */
export function unsafePathRule(path: string): Omit<SkillProblem, 'field'> | undefined {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (/[\u0000-\u001f\u007f]/.test(path))
    return { rule: 'control_character', message: 'a file path must not contain NUL or control characters' };
  if (path.includes('\\'))
    return { rule: 'backslash', message: 'separate folders with "/"; a backslash is a separator on Windows' };
  if (path.startsWith('/') || /^[A-Za-z]:/.test(path))
    return { rule: 'absolute_path', message: 'a file path is relative to the skill folder' };
  if (path.includes(':')) return { rule: 'colon', message: 'a file path must not contain ":"' };
  // The Agent Skills discovery index's rule: what an installer writes on any system and puts in a URL.
  if (!/^[\x20-\x7E]+$/.test(path))
    return {
      rule: 'not_portable',
      message: 'a file path is printable ASCII (letters, digits, spaces and punctuation)',
    };
  if (/[?#[\]]/.test(path))
    return { rule: 'not_portable', message: 'a file path must not contain "?", "#", "[" or "]"' };
  const segments = path.split('/');
  if (segments.includes('..')) return { rule: 'path_traversal', message: 'a ".." segment leaves the skill folder' };
  if (segments.includes('.')) return { rule: 'dot_segment', message: 'a "." segment is not allowed' };
  if (segments.includes(''))
    return { rule: 'empty_segment', message: 'a file path has no empty segment ("//" or a trailing "/")' };
  return undefined;
}

/**
 * Why a path cannot be written beside the others on every system: a file that is also another
 * file's folder, or a name that differs from an earlier one only by case (one file on macOS and
 * Windows). An installer would otherwise stop half-way.
 */
function collisionRule(files: readonly SkillFile[], path: string, i: number): Omit<SkillProblem, 'field'> | undefined {
  const parent = files.find((f) => path.startsWith(`${f.path}/`));
  if (parent) return { rule: 'file_and_folder', message: `${path} is inside ${parent.path}, which is a file` };
  const lower = path.toLowerCase();
  if (files.slice(0, i).some((f) => f.path !== path && f.path.toLowerCase() === lower))
    return { rule: 'case_collision', message: `${path} differs from another path only by case` };
  return undefined;
}

/** Text a skill file may hold: no NUL and no control character but tab, line feed, carriage return, form feed. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
const BINARY = /[\u0000-\u0008\u000b\u000e-\u001f\u007f]/;

/** The parsed frontmatter of a valid skill. */
export interface AgentSkillManifest {
  name: string;
  description: string;
  license?: string;
  compatibility?: string;
  metadata?: Record<string, string>;
  allowedTools?: string;
}

/** Splits SKILL.md into its frontmatter text and body, or says why it cannot. */
function frontmatterOf(text: string): { yaml: string } | SkillProblem {
  const lines = text.split(/\r?\n/);
  if (lines[0]?.trimEnd() !== '---')
    return {
      field: SKILL_FILE,
      rule: 'frontmatter_required',
      message: 'SKILL.md must start with YAML frontmatter between "---" lines (name and description)',
    };
  const end = lines.findIndex((l, i) => i > 0 && l.trimEnd() === '---');
  if (end < 0)
    return {
      field: SKILL_FILE,
      rule: 'frontmatter_unterminated',
      message: 'the frontmatter has no closing "---" line',
    };
  return { yaml: lines.slice(1, end).join('\n') };
}

const isString = (v: unknown): v is string => typeof v === 'string';

/** Checks the frontmatter fields against the specification's limits; returns the problems found. */
function checkFields(data: Record<string, unknown>): SkillProblem[] {
  const problems: SkillProblem[] = [];
  const add = (field: string, rule: string, message: string) =>
    problems.push({ field: `frontmatter.${field}`, rule, message });
  for (const key of Object.keys(data))
    if (!KNOWN_FIELDS.has(key))
      add(key, 'unknown_field', 'not a field of the Agent Skills specification (put extra facts in metadata)');

  const { name, description, license, compatibility, metadata } = data;
  if (name === undefined || name === null) add('name', 'required', 'name is required');
  else if (!isString(name)) add('name', 'type', 'name must be a string');
  else if (name.length < 1 || name.length > 64) add('name', 'length', 'name must be 1 to 64 characters');
  else if (!SKILL_NAME_PATTERN.test(name))
    add(
      'name',
      'pattern',
      'name is lowercase letters, digits and hyphens, without a leading, trailing or double hyphen',
    );

  if (description === undefined || description === null) add('description', 'required', 'description is required');
  else if (!isString(description)) add('description', 'type', 'description must be a string');
  else if (description.trim().length < 1 || description.length > 1024)
    add('description', 'length', 'description must be 1 to 1024 characters');

  if (license !== undefined && (!isString(license) || license.trim() === ''))
    add('license', 'type', 'license must be a non-empty string');
  if (compatibility !== undefined) {
    if (!isString(compatibility)) add('compatibility', 'type', 'compatibility must be a string');
    else if (compatibility.length < 1 || compatibility.length > 500)
      add('compatibility', 'length', 'compatibility must be 1 to 500 characters');
  }
  if (metadata !== undefined) {
    if (metadata === null || typeof metadata !== 'object' || Array.isArray(metadata))
      add('metadata', 'type', 'metadata must be a map of strings to strings');
    else
      for (const [k, v] of Object.entries(metadata))
        if (!isString(v)) add(`metadata.${k}`, 'type', 'metadata values are strings (quote numbers, e.g. "1.0")');
  }
  const tools = data['allowed-tools'];
  if (tools !== undefined && !isString(tools))
    add('allowed-tools', 'type', 'allowed-tools is a space-separated string of tool names');
  return problems;
}

/** The frontmatter of SKILL.md, parsed, with every problem found in it. */
export function parseSkillMd(text: string): { manifest?: AgentSkillManifest; problems: SkillProblem[] } {
  const front = frontmatterOf(text);
  if (!('yaml' in front)) return { problems: [front] };
  const doc = parseDocument(front.yaml, { uniqueKeys: true, prettyErrors: false });
  if (doc.errors.length > 0)
    return {
      problems: doc.errors.map((e) => ({
        field: SKILL_FILE,
        rule: e.code === 'DUPLICATE_KEY' ? 'duplicate_key' : 'yaml_syntax',
        message: `frontmatter is not valid YAML: ${e.message.split('\n')[0]}`,
      })),
    };
  if (!isMap(doc.contents) || !doc.contents.items.every((pair) => isScalar(pair.key) && isString(pair.key.value)))
    return {
      problems: [{ field: SKILL_FILE, rule: 'frontmatter_mapping', message: 'the frontmatter must be a YAML mapping' }],
    };
  const data = doc.toJS() as Record<string, unknown>;
  const problems = checkFields(data);
  if (problems.length > 0) return { problems };
  return {
    problems,
    manifest: {
      name: data.name as string,
      description: data.description as string,
      ...(isString(data.license) ? { license: data.license } : {}),
      ...(isString(data.compatibility) ? { compatibility: data.compatibility } : {}),
      ...(data.metadata ? { metadata: data.metadata as Record<string, string> } : {}),
      ...(isString(data['allowed-tools']) ? { allowedTools: data['allowed-tools'] } : {}),
    },
  };
}

/**
 * Checks a version's files as an Agent Skill and returns its frontmatter. Unsafe paths are
 * refused first (422 `file_path_unsafe`), then content that is not text (422 `file_not_text`),
 * then SKILL.md and its frontmatter (422 `agent_skill_invalid`); each lists every problem found.
 */
export function validateAgentSkill(files: readonly SkillFile[]): AgentSkillManifest {
  const paths = files.flatMap((f, i) => {
    const p = unsafePathRule(f.path) ?? collisionRule(files, f.path, i);
    return p ? [{ field: `body.files[${i}].path`, ...p }] : [];
  });
  if (paths.length > 0) throw new AgentSkillInvalidError('file_path_unsafe', 'A file path is not safe', paths);

  const binary = files.flatMap((f, i) =>
    BINARY.test(f.content)
      ? [
          {
            field: `body.files[${i}].content`,
            rule: 'not_text',
            message: `${f.path} holds NUL or control characters; skill files are UTF-8 text`,
          },
        ]
      : [],
  );
  if (binary.length > 0) throw new AgentSkillInvalidError('file_not_text', 'A file is not text', binary);

  const skill = files.find((f) => f.path === SKILL_FILE);
  if (!skill)
    throw new AgentSkillInvalidError('agent_skill_invalid', 'The files are not an Agent Skill', [
      { field: SKILL_FILE, rule: 'required', message: 'an Agent Skill has a SKILL.md at the top of its folder' },
    ]);
  const { manifest, problems } = parseSkillMd(skill.content);
  if (!manifest) throw new AgentSkillInvalidError('agent_skill_invalid', 'The files are not an Agent Skill', problems);
  return manifest;
}
