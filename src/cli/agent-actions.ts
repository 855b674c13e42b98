import { readdir, readFile } from 'node:fs/promises';
import { join, relative, resolve, sep } from 'node:path';
import type { Command } from 'commander';
import { readFrontmatter } from '@skill-market/skill-protocol/skill-frontmatter';
import { AgentHome } from './agent-home.js';
import { CliError } from './cli-error.js';
import type { CliIo } from './install.js';
import { MarketApi, type SearchHit, type X402Version } from './market-api.js';
import { formatUsdc, parseUsdc } from './usdc.js';
import type { FullView } from '@skill-market/skill-protocol/responses';
import { marketUrl } from './market-url.js';
import { checkReceipt } from './receipt.js';
import { writeSkill } from './skill-writer.js';
import { printableJson, shown } from './terminal-text.js';
import { verifySkill } from './verify.js';

/**
 * What the agent commands of skill-market do (register: register.ts): login, profile, publish, buy, payments, payment,
 * receipt, search. Each talks to the market the global --url names and keeps the agent's key and
 * token in the agents folder (--home).
 */

export interface GlobalOptions {
  url?: string;
  market?: string;
  home?: string;
}

/** The market URL: --url, then its alias --market, then SKILL_MARKET_URL, then localhost:3000 (https or loopback). */
export const urlOf = (io: CliIo, g: GlobalOptions) => marketUrl(io.env, g.url ?? g.market);

export interface Ctx {
  io: CliIo;
  api: MarketApi;
  home: AgentHome;
}

export function ctxOf(io: CliIo, cmd: Command): Ctx {
  const g = cmd.optsWithGlobals() as GlobalOptions;
  return { io, api: new MarketApi(urlOf(io, g), io.fetch ?? fetch), home: AgentHome.of(io.cwd, io.env, g.home) };
}

export const x402Of = (opts: { v1?: boolean }): X402Version => (opts.v1 ? 1 : 2);
export const usdc = (atomic: string | bigint) => formatUsdc({ amount: atomic.toString(), decimals: 6 });

/** A logged-in agent: its file (with a token) and wallet. */
async function signedIn(c: Ctx, handle: string) {
  const agent = await c.home.load(handle);
  if (!agent.token)
    throw new CliError('not_logged_in', `@${handle} has no token in ${c.home.dir}: run "skill-market login ${handle}"`);
  return { agent, token: agent.token, wallet: await c.home.wallet(agent) };
}

export async function login(c: Ctx, handle: string) {
  const agent = await c.home.load(handle);
  const wallet = await c.home.wallet(agent);
  const challenge = await c.api.challenge(wallet.address);
  if (challenge.action !== 'login')
    throw new CliError(
      'agent_not_registered',
      `wallet ${wallet.address} is not registered at ${c.api.base}: run "skill-market register ${handle}"`,
    );
  const done = await c.api.signIn(wallet, challenge);
  await c.home.save({ ...agent, token: done.token, agentId: done.agent.id });
  c.io.out(shown`logged in as @${done.agent.handle} at ${c.api.base}; token saved in ${c.home.fileOf(handle)}`);
}

export const PROFILE_FIELDS = {
  displayName: ['--display-name <text>', 'the name shown on pages and cards'],
  bio: ['--bio <text>', 'what the agent does (30+ characters count towards the checklist)'],
  avatarUrl: ['--avatar-url <https-url>', 'an image'],
  websiteUrl: ['--website-url <https-url>', 'a website'],
  docsUrl: ['--docs-url <https-url>', 'public documentation'],
  contactEmail: ['--contact-email <address>', 'an e-mail address'],
  contactUrl: ['--contact-url <https-url>', 'a social or contact link'],
} as const;

export async function profile(c: Ctx, handle: string, opts: Record<string, string | boolean | undefined>) {
  const { token } = await signedIn(c, handle);
  const patch = Object.fromEntries(
    Object.keys(PROFILE_FIELDS)
      .filter((k) => typeof opts[k] === 'string')
      .map((k) => [k, opts[k] === '' ? null : opts[k]]),
  );
  const agent = Object.keys(patch).length ? await c.api.editProfile(token, patch) : await c.api.me(token);
  if (opts.json) return c.io.out(printableJson(agent));
  c.io.out(shown`@${agent.handle}  ${c.api.base}/api/agents/${agent.handle}/agent-card.json`);
  c.io.out(shown`  wallet        ${agent.walletAddress}`);
  c.io.out(shown`  erc8004       ${agent.tokenId ?? '(none)'}`);
  for (const k of Object.keys(PROFILE_FIELDS))
    c.io.out(shown`  ${k.padEnd(13)} ${(agent[k] as string | null) ?? '(none)'}`);
  if (Object.keys(patch).length) c.io.out(`updated: ${Object.keys(patch).join(', ')}`);
}

/** A skill folder's files as the API takes them: paths relative to it, "/"-separated, dot files left out. */
export async function readSkillFolder(dir: string): Promise<{ path: string; content: string }[]> {
  const walk = async (d: string): Promise<string[]> =>
    (await readdir(d, { withFileTypes: true }))
      .filter((e) => !e.name.startsWith('.'))
      .sort((a, b) => a.name.localeCompare(b.name))
      .reduce<Promise<string[]>>(
        async (acc, e) => [
          ...(await acc),
          ...(e.isDirectory() ? await walk(join(d, e.name)) : e.isFile() ? [join(d, e.name)] : []),
        ],
        Promise.resolve([]),
      );
  let paths: string[];
  try {
    paths = await walk(dir);
  } catch (err) {
    throw new CliError('skill_folder_unreadable', `cannot read the skill folder ${dir}: ${(err as Error).message}`);
  }
  const files = await Promise.all(
    paths.map(async (f) => ({ path: relative(dir, f).split(sep).join('/'), content: await readFile(f, 'utf8') })),
  );
  if (!files.some((f) => f.path === 'SKILL.md'))
    throw new CliError('skill_md_missing', `${dir} holds no SKILL.md: an Agent Skill folder starts with one`);
  return files;
}

export async function publish(
  c: Ctx,
  handle: string,
  folder: string,
  opts: { title: string; price: string; tags?: string; preview?: string },
) {
  const { token, wallet } = await signedIn(c, handle);
  const files = await readSkillFolder(resolve(c.io.cwd, folder));
  const skillMd = files.find((f) => f.path === 'SKILL.md')?.content ?? '';
  const preview = opts.preview ?? readFrontmatter(skillMd)?.description ?? opts.title;
  const priceAtomic = parseUsdc(opts.price);
  const tags = opts.tags
    ?.split(',')
    .map((t) => t.trim())
    .filter(Boolean);
  const post = await c.api.publishSkill(token, wallet, { title: opts.title, preview, priceAtomic, tags, files });
  c.io.out(shown`published ${post.id}`);
  c.io.out(shown`  skill         ${post.name} ${post.versionLabel} (${files.length} file(s))`);
  c.io.out(`  price         ${usdc(priceAtomic)}`);
  c.io.out(shown`  skill digest  ${post.skillDigest}`);
  c.io.out(`  signed by     ${wallet.address} (EIP-712 SkillVersion)`);
  c.io.out(shown`  preview       ${c.api.base}/api/posts/${post.id}`);
}

export async function buy(c: Ctx, handle: string, postId: string, opts: { v1?: boolean; save?: string }) {
  const agent = await c.home.load(handle);
  const wallet = await c.home.wallet(agent);
  const { body, paymentId, transaction } = await c.api.buy(wallet, postId, x402Of(opts), agent.token);
  const files = Array.isArray(body.files) ? body.files : [];
  c.io.out(shown`bought "${body.title}" (${body.integrity?.name ?? '?'} ${body.integrity?.versionLabel ?? ''})`.trim());
  c.io.out(shown`  payment       ${paymentId ?? '(none: the agent already has it, nothing was charged)'}`);
  c.io.out(shown`  transaction   ${transaction ?? '(none)'}`);
  c.io.out(shown`  skill digest  ${body.integrity?.skillDigest ?? '(none)'}`);
  c.io.out(shown`  files         ${files.map((f) => f?.path).join(', ')}`);
  if (opts.save) await saveBought(c, body, resolve(c.io.cwd, opts.save));
  else c.io.out(shown`install it with checked digests: skill-market install ${handle} ${body.id}`);
}

/**
 * `buy --save`: the bought skill checked and written as `install` does it (verify.ts, then
 * skill-writer.ts) into `<root>/<name>`, never replacing anything there. An unsigned version is
 * saved and said to be unsigned; a signature by anyone but the seller is refused.
 */
async function saveBought(c: Ctx, view: FullView, root: string) {
  try {
    const listed = await c.api.entryOf(view.id);
    const skill = await verifySkill(view, listed, { seller: view.author?.walletAddress, allowUnsigned: true });
    const target = await writeSkill(root, skill, { base: c.io.cwd, replace: false });
    c.io.out(shown`  saved in      ${target} (${skill.files.length} file(s), every digest checked)`);
    c.io.out(
      skill.signer
        ? shown`  signed by     the seller ${skill.signer}`
        : '  signed by     nobody: the seller has not signed this version',
    );
  } catch (err) {
    if (!(err instanceof CliError)) throw err;
    // The purchase stands whatever happens here; say that nothing reached the disk.
    throw new CliError(err.code, `${err.message}; nothing was saved in ${root}`);
  }
}

export async function payments(c: Ctx, handle: string, opts: { limit: string }) {
  const { token } = await signedIn(c, handle);
  const page = await c.api.payments(token, Number(opts.limit));
  if (!page.items.length) return c.io.out(shown`@${handle} has no payments at ${c.api.base}`);
  for (const p of page.items)
    c.io.out(
      shown`${p.id}  ${String(p.status).padEnd(8)}  ${String(p.purpose).padEnd(12)}  ${usdc(p.amount).padEnd(10)}  ${p.txHash ?? '-'}`,
    );
}

export async function payment(c: Ctx, id: string, opts: { wait?: boolean; timeout: string }) {
  const p = opts.wait ? await c.api.waitForPayment(id, Number(opts.timeout) * 1000) : await c.api.payment(id);
  c.io.out(shown`payment ${p.id}: ${p.status}`);
  c.io.out(shown`  purpose       ${p.purpose}`);
  c.io.out(shown`  amount        ${usdc(p.amount)} on ${p.network}`);
  c.io.out(shown`  transaction   ${p.txHash ?? '(not yet)'}`);
  if (p.settledAt) c.io.out(shown`  settled at    ${p.settledAt}`);
  if (p.failureReason) c.io.out(shown`  failure       ${p.failureReason}`);
  if (opts.wait && !['settled', 'failed', 'expired'].includes(p.status))
    throw new CliError('payment_pending', shown`payment ${id} is still ${p.status} after ${opts.timeout} s`);
  if (p.status === 'failed' || p.status === 'expired')
    throw new CliError('payment_failed', shown`payment ${id} is ${p.status}`);
}

export async function receipt(c: Ctx, paymentId: string) {
  const r = await checkReceipt(c.api, paymentId);
  c.io.out(shown`${r.valid ? 'valid' : 'INVALID'} receipt for payment ${paymentId}, signed by ${r.signer}`);
  c.io.out(shown`  payer         ${r.payer}`);
  c.io.out(shown`  resource      ${r.resourceUrl}`);
  c.io.out(shown`  transaction   ${r.transaction} (${r.network}, ${r.issuedAt})`);
  if (r.purchase)
    c.io.out(shown`  bought        ${r.purchase.postId} ${await versionLabelOf(c, r.purchase)}, ${r.purchase.digest}`);
  if (!r.valid) throw new CliError('receipt_invalid', `the receipt's signature does not recover to ${r.signer}`);
}

/**
 * The label a skill declares for a version number (`1.0.0`), from the discovery index; a receipt
 * signs the number. A skill the index no longer lists is named by its number.
 */
async function versionLabelOf(c: Ctx, bought: { postId: string; version: number }): Promise<string> {
  const entry = await c.api.entryOf(bought.postId).catch(() => undefined);
  const label =
    entry?.versions?.find((v) => v.version === bought.version)?.versionLabel ??
    (entry?.version === bought.version ? entry.versionLabel : undefined);
  return label ?? `version ${bought.version}`;
}

export async function search(c: Ctx, query: string, opts: { limit: string; json?: boolean }) {
  const found = await c.api.search(query, Number(opts.limit));
  if (opts.json) return c.io.out(printableJson(found));
  if (found.didYouMean) c.io.out(shown`(searched for "${found.didYouMean}")`);
  if (!found.results.length) return c.io.out(shown`nothing matches "${query}" at ${c.api.base}`);
  for (const h of found.results) for (const line of searchLines(h, c.api.base)) c.io.out(line);
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/**
 * One search result as the lines it prints: what it is and its title (with its seller when
 * another result has the same title), then what tells it apart (price, buyers, version, seller
 * and score for a skill; score, skills and sales for an agent), its preview, and its page.
 */
export function searchLines(h: SearchHit, base: string): string[] {
  const kind = h.type === 'post' ? 'skill' : h.type;
  const pagePath = { post: `/skills/${h.id}`, agent: `/agents/${h.id}`, tag: `/search?q=${encodeURIComponent(h.id)}` };
  // A market that sends no page: the page of a known kind, else the URL it sent.
  const path = pagePath[h.type as keyof typeof pagePath];
  const page = h.page ?? (path ? `${base}${path}` : h.url);
  const seller = h.seller
    ? shown`@${h.seller.handle}${h.seller.displayName && h.seller.displayName !== h.seller.handle ? ` (${h.seller.displayName})` : ''}, score ${h.seller.score}`
    : undefined;
  const facts =
    h.type === 'post'
      ? [
          h.priceUsdc === undefined ? undefined : h.priceUsdc === '0' ? 'free' : shown`${h.priceUsdc} USDC`,
          h.buyers === undefined ? undefined : plural(h.buyers, 'buyer'),
          h.version === undefined ? undefined : shown`version ${h.version}`,
          seller && `by ${seller}`,
        ]
      : h.type === 'agent'
        ? [
            h.seller && shown`@${h.seller.handle}, score ${h.seller.score}`,
            h.publishedSkills === undefined ? undefined : plural(h.publishedSkills, 'skill'),
            h.sales90d === undefined ? undefined : `${plural(h.sales90d, 'sale')} in 90 days`,
          ]
        : [];
  const lines = [shown`${kind.padEnd(5)}  ${h.label ?? h.title}`];
  const known = facts.filter((f): f is string => Boolean(f));
  if (known.length) lines.push(`       ${known.join(' · ')}`);
  if (h.preview) lines.push(shown`       ${h.preview}`);
  lines.push(shown`       ${page}`);
  return lines;
}
