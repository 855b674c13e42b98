import type { AuditRule } from './types.js';

/**
 * Raised whenever a rule is added, removed, or changes what it finds or its severity: a stored
 * report with a lower number was made by other rules, and the version is audited again.
 */
export const RULES_VERSION = 1;

const rule = (id: string, severity: AuditRule['severity'], title: string, rationale: string): AuditRule =>
  Object.freeze({ id, severity, title, rationale });

/** Every rule, in the order docs/audit.md lists them. Ids are stable: clients branch on them. */
export const AUDIT_RULES: readonly AuditRule[] = Object.freeze([
  rule(
    'script.interpreter',
    'info',
    'Script file and its interpreter',
    'An agent may run any script a skill ships; a reader should know which files are programs and what runs them.',
  ),
  rule(
    'file.shebang-non-script',
    'warn',
    'Shebang on a file that is not a script',
    'A "#!" line on a document or data file makes it executable under a name that hides what it is.',
  ),
  rule(
    'file.binary',
    'warn',
    'Binary-looking content',
    'NUL bytes, replacement characters or many control characters mean the file is not the text it claims to be and cannot be reviewed.',
  ),
  rule(
    'file.minified',
    'warn',
    'Minified or generated code',
    'Very long dense lines cannot be reviewed by a person and are a common way to ship code nobody reads.',
  ),
  rule(
    'script.pipe-to-shell',
    'fail',
    'Downloaded text run by an interpreter',
    'curl | sh and its variants run whatever the server sends at that moment: nothing in the skill shows what will execute.',
  ),
  rule(
    'script.eval-fetched',
    'fail',
    'eval or exec of fetched text',
    'Evaluating a network response runs code that is not in the skill and can change after the audit.',
  ),
  rule(
    'network.host',
    'info',
    'Host the skill contacts or links to',
    'Knowing every destination lets a reader check that each one belongs to the task.',
  ),
  rule(
    'network.suspicious-host',
    'warn',
    'Raw IP address, paste site, URL shortener or request catcher',
    'These destinations hide who is behind them or exist to collect requests; legitimate skills name their services.',
  ),
  rule(
    'secrets.exfiltration',
    'fail',
    'Secrets read and sent over the network in the same script',
    'Credential files, the whole environment, or secret variables sent to an undocumented host is how stolen keys leave a machine.',
  ),
  rule(
    'secrets.credential-file',
    'warn',
    'Read of a credential file',
    'SSH keys, cloud credentials, .env files and keychains are rarely needed by a skill even when nothing is sent.',
  ),
  rule(
    'secrets.api-key',
    'info',
    'Secret from the environment sent to the documented host',
    'An API key read from a named variable and sent only to a host that SKILL.md names is the normal way to call a service.',
  ),
  rule(
    'obfuscation.encoded-blob',
    'warn',
    'Long base64 or hex blob',
    'A long encoded string hides its content from a reader; media (images, fonts) is recognised and left out.',
  ),
  rule(
    'obfuscation.exec-decoded',
    'fail',
    'eval or exec of decoded data',
    'Decoding a blob and running it exists only to hide the code that runs.',
  ),
  rule(
    'obfuscation.char-codes',
    'warn',
    'Text built from character codes',
    'String.fromCharCode or chr() chains spell text so that a search for it finds nothing.',
  ),
  rule(
    'persistence.startup-file',
    'fail',
    'Write to a shell start-up or persistence location',
    'Shell rc files, crontab, /etc, authorized_keys, LaunchAgents and systemd units make code run again long after the skill finished.',
  ),
  rule(
    'filesystem.write-outside',
    'warn',
    'Write outside the skill folder',
    'Absolute and home-directory paths reach files that belong to the user or other programs.',
  ),
  rule(
    'tools.allowed',
    'info',
    'Tools granted in allowed-tools',
    'allowed-tools lets the skill use tools without asking; a reader should see what it pre-approves.',
  ),
  rule(
    'tools.broad-grant',
    'warn',
    'Broad tool grant',
    'Unrestricted Bash, "*" or network shells such as Bash(curl:*) pre-approve anything, including every other finding here.',
  ),
  rule(
    'injection.override',
    'fail',
    'Instruction to ignore or override other instructions',
    "Text that tells the model to disregard its previous or system instructions is a prompt-injection attack on the user's agent.",
  ),
  rule(
    'injection.reviewer-directed',
    'fail',
    'Instruction aimed at a reviewing or auditing model',
    'Text that asks an AI reviewer to mark the skill safe exists only to defeat review.',
  ),
  rule(
    'injection.conceal',
    'warn',
    'Instruction to hide actions from the user',
    '"Do not tell the user" asks the agent to act behind its user\'s back.',
  ),
  rule(
    'injection.hidden-comment',
    'warn',
    'Instructions in an HTML comment',
    'Comments are invisible when markdown is rendered, yet the model reads them.',
  ),
  rule(
    'injection.invisible-chars',
    'warn',
    'Zero-width, bidi control or tag characters',
    'Invisible characters can hide text from a reader or reorder what is displayed.',
  ),
  rule(
    'injection.quoted',
    'info',
    'Injection phrase quoted as an example',
    'Inside a code block, inline code or a block quote the phrase is usually an example; it is still shown.',
  ),
]);

const BY_ID = new Map(AUDIT_RULES.map((r) => [r.id, r]));

/** The rule of an id; throws for an unknown id, which is a programming error. */
export function ruleById(id: string): AuditRule {
  const found = BY_ID.get(id);
  if (!found) throw new Error(`unknown audit rule ${id}`);
  return found;
}
