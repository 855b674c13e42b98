import { readFile } from 'node:fs/promises';
import { isAbsolute, resolve } from 'node:path';
import { privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { fileDigest } from '@skill-market/skill-protocol/skill-digest';
import { artifactFiles, fetchArtifact } from './artifact.js';
import { AgentHome } from './agent-home.js';
import { CliError } from './cli-error.js';
import { readLock, recordInLock, type LockedSkill } from './lock-file.js';
import { MarketApi } from './market-api.js';
import { formatUsdc, parseUsdc } from './usdc.js';
import type { IndexAudit, IndexEntryView, PreviewView } from '@skill-market/skill-protocol/responses';
import { marketUrl } from './market-url.js';
import { inside } from './safe-paths.js';
import { writeSkill } from './skill-writer.js';
import { shown } from './terminal-text.js';
import { verifySkill } from './verify.js';

/** Where the installer runs and how it speaks: the command line passes its process's. */
export interface CliIo {
  cwd: string;
  env: Readonly<Record<string, string | undefined>>;
  out(line: string): void;
  err(line: string): void;
  fetch?: typeof fetch;
}

export interface CommonOptions {
  market?: string;
  dir?: string;
}

export interface InstallOptions extends CommonOptions {
  /** The paying agent of the agents folder, as `buy` names it: its key file is read from there. */
  handle?: string;
  /** The agents folder (--home). */
  home?: string;
  keyFile?: string;
  maxPrice: string;
  /** Whether maxPrice is the default (not given): a refusal says so. */
  maxPriceDefault?: boolean;
  allowUnsigned?: boolean;
  /** Install a version whose audit failed (--allow-audit-fail). */
  allowAuditFail?: boolean;
  force?: boolean;
}

export const DEFAULT_DIR = '.agents/skills';
export const DEFAULT_MAX_PRICE = '1';

/** The skills folder the skills are installed into. */
export const skillsRoot = (io: CliIo, opts: CommonOptions) => {
  const dir = opts.dir ?? DEFAULT_DIR;
  return isAbsolute(dir) ? dir : resolve(io.cwd, dir);
};

/** The market of the run (--url, SKILL_MARKET_URL or the default), refused unless https or loopback. */
export const marketOf = (io: CliIo, opts: CommonOptions) => marketUrl(io.env, opts.market);

/**
 * The paying wallet: the key in --key-file, else the key of the agent named (its file in the agents
 * folder, as `buy` reads it), else SKILL_MARKET_KEY; none for free skills.
 */
export async function walletOf(io: CliIo, opts: InstallOptions): Promise<PrivateKeyAccount | undefined> {
  let key = io.env.SKILL_MARKET_KEY;
  if (!opts.keyFile && opts.handle) {
    const home = AgentHome.of(io.cwd, io.env, opts.home);
    return home.wallet(await home.load(opts.handle));
  }
  if (opts.keyFile) {
    try {
      key = (await readFile(resolve(io.cwd, opts.keyFile), 'utf8')).trim();
    } catch (err) {
      throw new CliError('wallet_unreadable', `cannot read --key-file ${opts.keyFile}: ${(err as Error).message}`);
    }
  }
  if (key === undefined || key === '') return undefined;
  if (!/^0x[0-9a-fA-F]{64}$/.test(key))
    throw new CliError('wallet_invalid', 'the wallet key must be a 0x-prefixed 32-byte hex private key');
  return privateKeyToAccount(key as `0x${string}`);
}

/**
 * Refuses, before anything is paid, a version the index lists as unsigned (without
 * --allow-unsigned) or as signed by another wallet than the seller. The files' own integrity is
 * checked again once received.
 */
function assertSignedAsListed(listed: IndexEntryView, preview: PreviewView, allowUnsigned: boolean): void {
  if (listed.version !== preview.version) return;
  const seller = preview.author.walletAddress;
  if (listed.signature === null && !allowUnsigned)
    throw new CliError(
      'unsigned_version',
      `refused: ${listed.name} ${listed.versionLabel} is not signed by its seller ${seller}; ` +
        'pass --allow-unsigned to install it anyway (nothing was paid)',
    );
  if (listed.signature && listed.signature.signer.toLowerCase() !== seller.toLowerCase())
    throw new CliError(
      'signature_not_seller',
      `refused: ${listed.name} ${listed.versionLabel} is signed by ${listed.signature.signer}, not by its seller ${seller} (nothing was paid)`,
    );
}

/** The audit line the installer prints: the verdict, its counts and where the report is. */
export function auditLine(audit: IndexAudit | undefined): string {
  if (!audit) return 'audit: not stated by this market';
  if (audit.verdict === 'pending') return `audit: pending (${audit.report})`;
  const c = audit.counts;
  const counts = c ? ` (${c.fail} fail, ${c.warn} warn, ${c.info} info)` : '';
  const overridden = audit.overridden ? ', cleared by an operator' : '';
  return `audit: ${audit.verdict}${counts}${overridden}; report ${audit.report}`;
}

/**
 * Refuses, before anything is paid, a version whose audit failed (unless an operator cleared it),
 * without --allow-audit-fail: the audit found something that version's files would do that a
 * buyer must read first.
 */
function assertAuditAllows(listed: IndexEntryView, preview: PreviewView, allowAuditFail: boolean): void {
  if (listed.version !== preview.version || listed.audit?.verdict !== 'fail' || listed.audit.overridden) return;
  if (allowAuditFail) return;
  throw new CliError(
    'audit_failed',
    `refused: ${listed.name} ${listed.versionLabel} failed its audit: ${auditLine(listed.audit)}. ` +
      'Read the report; pass --allow-audit-fail to install it anyway (nothing was paid)',
  );
}

/**
 * Checks the artifact the index names for the version installed (the discovery draft's `type`,
 * `url`, `digest`, or the RFC's `package`): its raw bytes must have the listed digest and hold
 * exactly the files already verified. A paid skill's archive is not public (402): its files were
 * checked file by file and against the skill digest, as the RFC asks. What was checked, for the output.
 */
async function checkArtifact(
  listed: IndexEntryView | undefined,
  skill: { version: number; files: readonly { path: string; content: string }[] },
  base: string,
  fetchImpl: typeof fetch,
): Promise<string | undefined> {
  const artifact = listed?.version === skill.version ? listed.artifact : undefined;
  if (!artifact) return undefined;
  const { bytes, status } = await fetchArtifact(artifact, base, fetchImpl);
  if (status === 402) return `${artifact.type} not public (a paid skill): files checked against their digests`;
  if (status !== 200) throw new CliError('market_refused', `GET ${artifact.url} answered ${status}`);
  const inside = new Map((await artifactFiles(artifact, bytes)).map((f) => [f.path, f.content]));
  const expected = artifact.type === 'skill-md' ? skill.files.filter((f) => f.path === 'SKILL.md') : skill.files;
  if (inside.size !== expected.length || expected.some((f) => inside.get(f.path) !== f.content))
    throw new CliError(
      'digest_mismatch',
      `refused: the ${artifact.type} at ${artifact.url} does not hold the files the seller published`,
    );
  return `${artifact.type} ${artifact.digest} checked`;
}

/**
 * Installs one skill: resolves it (id, name or seller/name) through the discovery index, obtains
 * the full view (free, read again by its buyer, or bought now), verifies every file, the skill
 * digest and the seller's signature, writes the folder in one step and records it in the lock file.
 */
export async function install(ref: string, opts: InstallOptions, io: CliIo): Promise<LockedSkill & { name: string }> {
  const market = new MarketApi(marketOf(io, opts), io.fetch ?? fetch);
  const root = skillsRoot(io, opts);
  const maxAtomic = parseUsdc(opts.maxPrice);
  const { postId, entry } = await market.resolve(ref);
  const preview = await market.preview(postId);
  const listed = entry ?? (await market.entryOf(postId));
  if (listed) {
    // The audit first: what a version's files would do matters more than who signed them.
    assertAuditAllows(listed, preview, Boolean(opts.allowAuditFail));
    assertSignedAsListed(listed, preview, Boolean(opts.allowUnsigned));
  }
  const wallet = await walletOf(io, opts);
  const { view, access } = await market.fullView(preview, wallet, {
    atomic: maxAtomic,
    limit: `--max-price ${opts.maxPrice} USDC${opts.maxPriceDefault ? ' (the default)' : ''}`,
  });
  const skill = await verifySkill(view, listed, {
    seller: preview.author.walletAddress,
    allowUnsigned: Boolean(opts.allowUnsigned),
  });
  const artifactCheck = await checkArtifact(listed, skill, market.base, io.fetch ?? fetch);
  const lock = await readLock(root);
  const holder = lock.skills[skill.name];
  if (holder && holder.postId !== skill.postId && !opts.force)
    throw new CliError(
      'name_taken',
      `refused: ${inside(root, skill.name)} holds skill ${holder.postId} of the same name; pass --force to replace it`,
    );
  // Only a folder the lock file records as installed here is replaced (or any, with --force).
  const target = await writeSkill(root, skill, {
    base: io.cwd,
    replace: Boolean(holder || opts.force),
    advice: 'the lock file does not record it as installed: move it away, or pass --force to replace it',
  });
  const locked: LockedSkill = {
    postId: skill.postId,
    market: market.base,
    version: skill.version,
    versionLabel: skill.versionLabel,
    skillDigest: skill.skillDigest,
    files: skill.files.map((f) => ({ path: f.path, digest: fileDigest(f.content) })),
    signer: skill.signer,
    installedAt: new Date().toISOString(),
  };
  await recordInLock(root, skill.name, locked);
  const how =
    access === 'paid'
      ? `bought for ${formatUsdc(preview.price)}`
      : access === 're-read'
        ? 'read again with the wallet that bought it, nothing charged'
        : 'free';
  io.out(shown`installed ${skill.name} ${skill.versionLabel} into ${target}`);
  io.out(shown`  ${how}; files checked: ${skill.files.length}, skill digest ${skill.skillDigest}`);
  io.out(
    skill.signer ? shown`  signed by the seller ${skill.signer}` : '  not signed by its seller (--allow-unsigned)',
  );
  io.out(shown`  ${auditLine(listed?.version === skill.version ? listed.audit : undefined)}`);
  if (artifactCheck) io.out(shown`  ${artifactCheck}`);
  if (skill.files.some((f) => f.path.startsWith('scripts/')))
    io.out('  its scripts/ were written, not run: read them before you let an agent run them');
  return { name: skill.name, ...locked };
}

/** Each installed skill with whether its files on disk still match what was installed. */
export async function listInstalled(opts: CommonOptions, io: CliIo) {
  const root = skillsRoot(io, opts);
  const lock = await readLock(root);
  return Promise.all(
    Object.entries(lock.skills).map(async ([name, skill]) => {
      let state: 'ok' | 'modified' | 'missing' = 'ok';
      for (const file of skill.files) {
        const content = await readFile(inside(root, `${name}/${file.path}`), 'utf8').catch(() => undefined);
        if (content === undefined) state = 'missing';
        else if (state === 'ok' && fileDigest(content) !== file.digest) state = 'modified';
      }
      return { name, state, ...skill };
    }),
  );
}

/**
 * Brings installed skills (all, or the one named) to the version the market lists now. A skill
 * the wallet bought is read again without paying: a purchase covers every version. Only skills
 * installed from the market this run talks to (--url, SKILL_MARKET_URL or the default) are
 * touched: a lock file names markets, and one copied from elsewhere must not send the wallet to pay
 * a market the user did not choose.
 */
export async function update(name: string | undefined, opts: InstallOptions, io: CliIo) {
  const root = skillsRoot(io, opts);
  const lock = await readLock(root);
  const names = name ? [name] : Object.keys(lock.skills);
  if (name && !lock.skills[name]) throw new CliError('not_installed', `${name} is not installed in ${root}`);
  const results: {
    name: string;
    outcome: 'updated' | 'up-to-date' | 'unlisted' | 'other-market';
    from: string;
    to?: string;
  }[] = [];
  const chosen = marketOf(io, opts);
  for (const n of names) {
    const locked = lock.skills[n];
    if (!locked) continue;
    if (locked.market.replace(/\/+$/, '') !== chosen) {
      io.out(shown`${n}: installed from ${locked.market}, not ${chosen}; update it with --url ${locked.market}`);
      results.push({ name: n, outcome: 'other-market', from: locked.versionLabel });
      continue;
    }
    const market = new MarketApi(chosen, io.fetch ?? fetch);
    const entry = await market.entryOf(locked.postId);
    if (!entry) {
      io.out(shown`${n}: no longer listed by ${market.base}; ${locked.versionLabel} kept`);
      results.push({ name: n, outcome: 'unlisted', from: locked.versionLabel });
    } else if (entry.digest === locked.skillDigest) {
      io.out(shown`${n}: up to date (${locked.versionLabel})`);
      results.push({ name: n, outcome: 'up-to-date', from: locked.versionLabel });
    } else {
      const done = await install(locked.postId, { ...opts, market: market.base, force: true }, io);
      io.out(shown`${n}: updated ${locked.versionLabel} -> ${done.versionLabel}`);
      results.push({ name: n, outcome: 'updated', from: locked.versionLabel, to: done.versionLabel });
    }
  }
  return results;
}
