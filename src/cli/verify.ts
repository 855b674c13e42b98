import { getAddress, isAddress, type Address, type Hex } from 'viem';
import { agentSkillProblems, SKILL_NAME_PATTERN } from '@skill-market/skill-protocol/skill-frontmatter';
import { fileDigest, skillDigest, type SkillFile } from '@skill-market/skill-protocol/skill-digest';
import { isVersionSignedBy } from '@skill-market/skill-protocol/version-signature';
import { CliError } from './cli-error.js';
import type { FullView, IndexEntryView, IntegrityView, SignatureView } from '@skill-market/skill-protocol/responses';
import { assertSafePaths } from './safe-paths.js';

/** A skill whose every file, digest and signature checked out: what the installer may write. */
export interface VerifiedSkill {
  postId: string;
  name: string;
  version: number;
  versionLabel: string;
  skillDigest: string;
  files: SkillFile[];
  /** The seller wallet that signed the version, or null for an unsigned one (--allow-unsigned). */
  signer: Address | null;
}

export interface VerifyOptions {
  /** The seller's wallet, from the skill's public view. */
  seller: string;
  /** Install a version its seller has not signed (a signature by another wallet is refused anyway). */
  allowUnsigned: boolean;
}

const short = (digest: string) => `${digest.slice(0, 19)}…`;

/** What the digests are checked against: the full view's `integrity`, else the index's entry of that version. */
function expectedIntegrity(view: FullView, entry: IndexEntryView | undefined): IntegrityView {
  if (view.integrity) return view.integrity;
  const listed = entry?.versions?.find((v) => v.version === view.version);
  if (!entry || !listed)
    throw new CliError(
      'integrity_unavailable',
      `refused: neither the skill nor the discovery index states the digests of version ${view.version}`,
    );
  return {
    name: entry.name,
    version: listed.version,
    versionLabel: listed.versionLabel,
    skillDigest: listed.digest,
    files: listed.files,
    signature: listed.signature,
  };
}

async function checkSignature(
  signature: SignatureView | null,
  statement: { postId: string; version: number; name: string; digest: string },
  opts: VerifyOptions,
): Promise<Address | null> {
  if (!isAddress(opts.seller)) throw new CliError('seller_unknown', 'refused: the skill names no seller wallet');
  const seller = getAddress(opts.seller);
  if (!signature) {
    if (opts.allowUnsigned) return null;
    throw new CliError(
      'unsigned_version',
      `refused: version ${statement.version} of ${statement.name} is not signed by its seller ${seller}; ` +
        'pass --allow-unsigned to install it anyway',
    );
  }
  if (!isAddress(signature.signer) || getAddress(signature.signer) !== seller)
    throw new CliError(
      'signature_not_seller',
      `refused: version ${statement.version} of ${statement.name} is signed by ${signature.signer}, not by its seller ${seller}`,
    );
  if (!(await isVersionSignedBy(seller, statement, signature.value as Hex)))
    throw new CliError(
      'signature_invalid',
      `refused: the signature on version ${statement.version} of ${statement.name} is not its seller's (${seller}) over digest ${statement.digest}`,
    );
  return seller;
}

/**
 * Checks a skill as received before anything is written: safe file names, every file against its
 * digest, the set of files, the skill digest (against the full view's integrity and the discovery
 * index alike), the Agent Skill rules (SKILL.md names the folder), and the seller's signature.
 */
export async function verifySkill(
  view: FullView,
  entry: IndexEntryView | undefined,
  opts: VerifyOptions,
): Promise<VerifiedSkill> {
  const files = view.files;
  if (!Array.isArray(files) || !files.every((f) => typeof f?.path === 'string' && typeof f?.content === 'string'))
    throw new CliError('files_missing', 'refused: the answer holds no skill files');
  assertSafePaths(files.map((f) => f.path));
  const expected = expectedIntegrity(view, entry);
  assertSafePaths(expected.files.map((f) => f.path));
  const name = expected.name;
  if (!SKILL_NAME_PATTERN.test(name))
    throw new CliError('not_an_agent_skill', `refused: "${name}" is not a valid Agent Skill name`);

  const stated = new Map(expected.files.map((f) => [f.path, f.digest]));
  for (const file of files) {
    const want = stated.get(file.path);
    if (want === undefined)
      throw new CliError('digest_mismatch', `refused: ${file.path} is not among the files the seller published`);
    const got = fileDigest(file.content);
    if (got !== want)
      throw new CliError(
        'digest_mismatch',
        `refused: ${file.path} does not match its published digest (expected ${short(want)}, got ${short(got)}); ` +
          'the copy was altered on its way',
      );
  }
  const missing = expected.files.filter((f) => !files.some((g) => g.path === f.path));
  if (missing.length)
    throw new CliError('digest_mismatch', `refused: ${missing.map((f) => f.path).join(', ')} missing from the copy`);

  const digest = skillDigest(files);
  const listed = entry?.versions?.find((v) => v.version === expected.version)?.digest;
  for (const [source, want] of [
    ['the skill', expected.skillDigest],
    ['the discovery index', listed],
  ] as const)
    if (want !== undefined && want !== digest)
      throw new CliError(
        'digest_mismatch',
        `refused: the skill digest ${short(digest)} differs from ${short(want)} stated by ${source}`,
      );

  const problems = agentSkillProblems(name, files);
  if (problems.length)
    throw new CliError('not_an_agent_skill', `refused: not a valid Agent Skill: ${problems.join('; ')}`);

  const signer = await checkSignature(
    expected.signature,
    { postId: view.id, version: expected.version, name, digest },
    opts,
  );
  return {
    postId: view.id,
    name,
    version: expected.version,
    versionLabel: expected.versionLabel,
    skillDigest: digest,
    files: files.map((f) => ({ path: f.path, content: f.content })),
    signer,
  };
}
