import type { PrivateKeyAccount } from 'viem/accounts';
import { wrapFetchWithSIWx } from '@x402/extensions/sign-in-with-x';
import { decodePaymentRequiredHeader } from '@x402/core/http';
import type { PaymentRequirements } from '@x402/core/types';
import type {
  FullView,
  IndexEntryView,
  PreviewView,
  SearchHit,
  SkillsIndexView,
} from '@skill-market/skill-protocol/responses';
import { SKILLS_INDEX_PATH, shardOf, shardPath } from '@skill-market/skill-protocol/skills-index-layout';
import { versionTypedData } from '@skill-market/skill-protocol/version-signature';
import { CliError, unreachable } from './cli-error.js';
import { formatUsdc } from './usdc.js';
import { payingFetch, settlement, type Spend, type X402Version } from './x402-pay.js';

export type { Spend, X402Version } from './x402-pay.js';
export type { SearchHit } from '@skill-market/skill-protocol/responses';

/**
 * The marketplace's HTTP API as the client uses it: sign-in and registration (paid over x402),
 * profile, publishing signed skills, buying, payments and receipts, search, and what the installer
 * reads (the discovery index, a skill's views). The one HTTP client of the CLI: every refusal is a
 * CliError naming the request and the cause (the problem+json `code` and `detail`, refusal below).
 */

export type Json = Record<string, unknown>;

export interface Challenge {
  action: 'login' | 'register';
  handle: string;
  message: string;
  registrationFee?: { amount: string; asset: string; network: string; payTo: string };
}
export interface AgentRecord {
  id: string;
  handle: string;
  walletAddress: string;
  tokenId: string | null;
  [field: string]: unknown;
}
export interface SignedIn {
  action: 'login' | 'register';
  token: string;
  agent: AgentRecord;
  paymentId?: string;
  transaction?: string;
}
export interface FaucetAnswer {
  address: string;
  amount: string;
  txHash: string;
  chainId?: number;
  rpcUrl?: string;
  identityRegistry?: string;
}
export interface Payment {
  id: string;
  status: string;
  purpose: string;
  amount: string;
  network: string;
  resource: string | null;
  txHash: string | null;
  failureReason: string | null;
  createdAt: string;
  settledAt: string | null;
}
/** A purchase's refund request and refund as the market shows them to anyone (docs/refunds.md). */
export interface RefundState {
  paymentId: string;
  postId: string;
  request: {
    reason: string;
    text: string;
    status: 'open' | 'accepted' | 'declined';
    declineReason: string | null;
    declineText: string | null;
    requestedAt: string;
    respondedAt: string | null;
  } | null;
  refund: {
    id: string;
    status: 'relaying' | 'settled' | 'failed';
    amount: string;
    buyer: string;
    from: string;
    txHash: string | null;
    failureReason: string | null;
    createdAt: string;
    settledAt: string | null;
    receipt: {
      typedData: { message: Record<string, string> };
      signature: string;
      signer: string;
    } | null;
  } | null;
}
export interface Paid<T> {
  body: T;
  paymentId?: string;
  transaction?: string;
}

const FINAL = new Set(['settled', 'failed', 'expired']);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** How the full skill was obtained: free to read, read again by the wallet that bought it, or bought now. */
export type Access = 'free' | 're-read' | 'paid';

/**
 * The CLI's error for an answer that is not a success: `<METHOD> <url> answered <status> <code>:
 * <detail>` from a problem+json body (`error` and `title` where a market sends those instead), else
 * the status line. `market_refused` unless the caller names the code (a missing skill, a payment).
 */
async function refusal(
  res: Response,
  request: { method: string; url: string },
  code = 'market_refused',
  prefix = '',
): Promise<CliError> {
  const text = await res.text().catch(() => '');
  let said = '';
  try {
    const body = JSON.parse(text) as { code?: string; error?: string; detail?: string; title?: string };
    said = [body.code ?? body.error, body.detail ?? body.title].filter(Boolean).join(': ');
  } catch {
    // not JSON: the status line says what there is to say
  }
  const answered = said ? `${res.status} ${said}` : `${res.status} ${res.statusText}`.trim();
  return new CliError(code, `${prefix}${request.method} ${request.url} answered ${answered}`);
}

/** A network failure of fetch itself (undici's "fetch failed"), as opposed to a payment client's refusal. */
const isNetworkFailure = (err: unknown) =>
  err instanceof TypeError && (err.message === 'fetch failed' || (err as { cause?: unknown }).cause !== undefined);

export class MarketApi {
  private index?: SkillsIndexView;
  /** The shards of the discovery index read so far, by path (read once per client). */
  private readonly shards = new Map<string, Promise<SkillsIndexView>>();

  constructor(
    readonly base: string,
    private readonly fetchImpl: typeof fetch = fetch,
  ) {}

  /**
   * Sends a request; a network failure becomes `market_unreachable`, a 4xx/5xx (but 402)
   * `market_refused`, or `skill_not_found` for a 404 when `notFound` names what was asked for.
   */
  async send(
    path: string,
    init: { method?: string; json?: unknown; token?: string; through?: typeof fetch; notFound?: string } = {},
  ): Promise<Response> {
    const url = `${this.base}${path}`;
    const method = init.method ?? (init.json === undefined ? 'GET' : 'POST');
    let res: Response;
    try {
      res = await (init.through ?? this.fetchImpl)(url, {
        method,
        headers: {
          accept: 'application/json',
          ...(init.json !== undefined ? { 'content-type': 'application/json' } : {}),
          ...(init.token ? { authorization: `Bearer ${init.token}` } : {}),
        },
        ...(init.json !== undefined ? { body: JSON.stringify(init.json) } : {}),
      });
    } catch (err) {
      if (isNetworkFailure(err)) throw unreachable(url, this.base, err);
      throw new CliError(
        'payment_failed',
        `${method} ${url}: the x402 client refused to pay: ${(err as Error).message}`,
      );
    }
    if (res.status === 404 && init.notFound)
      throw await refusal(res, { method, url }, 'skill_not_found', `${init.notFound} not found at ${this.base}: `);
    if (!res.ok) throw await refusal(res, { method, url });
    return res;
  }

  async json<T>(path: string, init: Parameters<MarketApi['send']>[1] = {}): Promise<T> {
    return (await (await this.send(path, init)).json()) as T;
  }

  /** Test USDC (and gas) from the development faucet; undefined when the market has none. */
  async faucet(address: string, atomic: bigint): Promise<FaucetAnswer | undefined> {
    try {
      return await this.json<FaucetAnswer>('/dev/faucet', { json: { address, amount: atomic.toString() } });
    } catch (err) {
      if (err instanceof CliError && / answered 404 /.test(err.message)) return undefined;
      throw err;
    }
  }

  challenge(address: string, handle?: string): Promise<Challenge> {
    return this.json<Challenge>('/api/agents/challenge', { json: { address, ...(handle ? { handle } : {}) } });
  }

  /**
   * Signs `challenge` with `account` and sends it: a login answers at once, a registration pays
   * the fee over x402 first.
   */
  async signIn(account: PrivateKeyAccount, challenge: Challenge, x402: X402Version = 2): Promise<SignedIn> {
    const signature = await account.signMessage({ message: challenge.message });
    const fee = challenge.registrationFee;
    const through = fee
      ? this.payingFetch(account, { network: fee.network, asset: fee.asset, maxAtomic: BigInt(fee.amount) }, x402)
      : undefined;
    const res = await this.send('/api/agents/verify', { json: { message: challenge.message, signature }, through });
    const body = (await res.json()) as SignedIn;
    return { ...body, paymentId: body.paymentId ?? res.headers.get('x-payment-id') ?? undefined, ...settlement(res) };
  }

  me(token: string): Promise<AgentRecord> {
    return this.json<AgentRecord>('/api/agents/me', { token });
  }

  editProfile(token: string, patch: Json): Promise<AgentRecord> {
    return this.json<AgentRecord>('/api/agents/me', { method: 'PATCH', json: patch, token });
  }

  /**
   * Creates a skill post from its files, then publishes it with the wallet's ownership proof of
   * the market origin and its EIP-712 signature of the version (name and skill digest).
   */
  async publishSkill(
    token: string,
    account: PrivateKeyAccount,
    post: {
      title: string;
      preview: string;
      priceAtomic: bigint;
      tags?: string[];
      files: { path: string; content: string }[];
      /** Other fields of the post (oasfSkills, oasfDomains, ...). */
      extra?: Json;
    },
  ): Promise<{ id: string; name: string; version: number; versionLabel: string; skillDigest: string }> {
    const created = await this.json<{
      id: string;
      integrity: { name: string; version: number; versionLabel?: string; skillDigest: string };
    }>('/api/posts', {
      token,
      json: {
        ...post.extra,
        title: post.title,
        preview: post.preview,
        priceAtomic: post.priceAtomic.toString(),
        ...(post.tags?.length ? { tags: post.tags } : {}),
        body: { files: post.files },
      },
    });
    const { integrity } = created;
    const versionSignature = await account.signTypedData(
      versionTypedData({
        postId: created.id,
        version: integrity.version,
        name: integrity.name,
        digest: integrity.skillDigest,
      }),
    );
    const ownershipProof = await account.signMessage({ message: await this.publicOrigin() });
    await this.send(`/api/posts/${created.id}/publish`, { token, json: { ownershipProof, versionSignature } });
    // The label the skill declares (1.0.0); a market that sends none is shown its number.
    const versionLabel = integrity.versionLabel ?? `version ${integrity.version}`;
    return { ...integrity, id: created.id, versionLabel };
  }

  /**
   * The origin the market calls itself (its site AgentCard's url), which an ownership proof signs:
   * behind a proxy it differs from the URL this client talks to.
   */
  async publicOrigin(): Promise<string> {
    const card = await this.json<{ url?: string }>('/.well-known/agent-card.json');
    return new URL(card.url ?? this.base).origin;
  }

  /**
   * The MCP server the site AgentCard announces (its Streamable HTTP transport extension), if any:
   * what an agent's registration file lists as its MCP service.
   */
  async mcpService(): Promise<{ endpoint: string; version: string } | undefined> {
    type Card = { capabilities?: { extensions?: Array<{ params?: Record<string, unknown> }> } };
    const card = await this.json<Card>('/.well-known/agent-card.json');
    const mcp = card.capabilities?.extensions?.find((e) => e.params?.transport === 'streamable-http')?.params;
    return typeof mcp?.endpoint === 'string' && typeof mcp.protocolVersion === 'string'
      ? { endpoint: mcp.endpoint, version: mcp.protocolVersion }
      : undefined;
  }

  preview(postId: string): Promise<PreviewView> {
    return this.json<PreviewView>(`/api/posts/${encodeURIComponent(postId)}`, { notFound: `skill ${postId}` });
  }

  /**
   * Buys a skill's full view over x402, paying at most its listed price in its listed asset. With
   * the agent's `token`, a skill the agent already owns (bought, its own, or free) is read with it
   * first and nothing is paid: only a 402 to that read leads to a payment.
   */
  async buy(
    account: PrivateKeyAccount,
    postId: string,
    x402: X402Version = 2,
    token?: string,
  ): Promise<Paid<FullView>> {
    const preview = await this.preview(postId);
    if (token) {
      const url = `${this.base}/api/posts/${preview.id}?view=full`;
      const owned = await this.fetchImpl(url, {
        headers: { accept: 'application/json', authorization: `Bearer ${token}` },
      }).catch((err) => {
        throw isNetworkFailure(err) ? unreachable(url, this.base, err) : err;
      });
      if (owned.ok) return { body: (await owned.json()) as FullView };
      if (owned.status !== 402) throw await refusal(owned, { method: 'GET', url });
    }
    const spend = {
      network: preview.price.network,
      asset: preview.price.asset,
      maxAtomic: BigInt(preview.price.amount),
    };
    const res = await this.send(`/api/posts/${preview.id}?view=full`, {
      through: this.payingFetch(account, spend, x402),
    });
    return {
      body: (await res.json()) as FullView,
      paymentId: res.headers.get('x-payment-id') ?? undefined,
      ...settlement(res),
    };
  }

  /** The discovery index (read once per client). */
  async skillsIndex(): Promise<SkillsIndexView> {
    if (!this.index) {
      const index = await this.json<SkillsIndexView>(SKILLS_INDEX_PATH, { notFound: 'the discovery index' });
      this.index = readIndex(index);
    }
    return this.index;
  }

  /**
   * The index entry of a post id, if the index lists it (an unpublished skill is no longer
   * listed): inline among the most bought, else in the shard named by the id's first two hex
   * digits, when the index has shards.
   */
  async entryOf(postId: string): Promise<IndexEntryView | undefined> {
    const id = postId.toLowerCase();
    const index = await this.skillsIndex();
    const inline = index.skills.find((s) => s.id === id);
    if (inline || !index.shards) return inline;
    const path = shardPath(shardOf(id));
    let shard = this.shards.get(path);
    if (!shard) {
      shard = this.json<SkillsIndexView>(path, { notFound: 'the discovery index shard' }).then(readIndex);
      this.shards.set(path, shard);
    }
    const { skills } = await shard;
    return Array.isArray(skills) ? skills.find((s) => s.id === id) : undefined;
  }

  /**
   * The post a reference names: a post id, a skill name, or `seller/name` when several sellers
   * publish a skill of that name.
   */
  async resolve(ref: string): Promise<{ postId: string; entry?: IndexEntryView }> {
    if (UUID.test(ref)) return { postId: ref.toLowerCase(), entry: await this.entryOf(ref) };
    const [seller, name] = ref.includes('/') ? ref.split('/', 2) : [undefined, ref];
    const named = (skills: readonly IndexEntryView[]) =>
      skills.filter((s) => s.name === name && (seller === undefined || s.seller.handle === seller));
    const index = await this.skillsIndex();
    const found = new Map(named(index.skills).map((s) => [s.id, s]));
    // A sharded index lists only the most bought inline: the market's search finds other
    // candidates (found or not inline, so another seller's skill of the same name is still
    // reported as ambiguous), and their shards say which carry the name.
    if (index.shards && name) {
      const hits = (await this.search(name, 50)).results.filter((h) => h.type === 'post' && UUID.test(h.id));
      const entries = await Promise.all(hits.map((h) => this.entryOf(h.id)));
      for (const e of named(entries.filter((e): e is IndexEntryView => e !== undefined))) found.set(e.id, e);
    }
    const matches = [...found.values()];
    const [only] = matches;
    if (!only) throw new CliError('skill_not_found', `no published skill named "${ref}" at ${this.base}`);
    if (matches.length > 1)
      throw new CliError(
        'ambiguous_name',
        `several sellers publish "${ref}": ${matches.map((s) => `${s.seller.handle}/${s.name} (${s.id})`).join(', ')}; ` +
          'name one as seller/name or by id',
      );
    return { postId: only.id, entry: only };
  }

  /**
   * The full view for the installer: read as is when free (or the wallet's own), read again with a
   * Sign-In-With-X proof when the wallet bought it before (nothing charged), otherwise bought over
   * x402 for at most `maxPrice.atomic` of the listed asset (`maxPrice.limit` names the limit in a
   * refusal).
   */
  async fullView(
    preview: PreviewView,
    wallet: PrivateKeyAccount | undefined,
    maxPrice: { atomic: bigint; limit: string },
  ): Promise<{ view: FullView; access: Access }> {
    const url = `${this.base}/api/posts/${encodeURIComponent(preview.id)}?view=full`;
    const read = wallet ? wrapFetchWithSIWx(this.fetchImpl, wallet) : this.fetchImpl;
    const first = await read(url).catch((err: unknown) => {
      throw isNetworkFailure(err) ? unreachable(url, this.base, err) : err;
    });
    if (first.ok) return { view: (await first.json()) as FullView, access: preview.price.free ? 'free' : 're-read' };
    if (first.status !== 402) throw await refusal(first, { method: 'GET', url });
    await first.body?.cancel();
    if (!wallet)
      throw new CliError(
        'wallet_required',
        `skill ${preview.id} costs ${formatUsdc(preview.price)}: name the paying agent as buy does ` +
          `(skill-market install <handle> ${preview.id}), or pass --key-file or set SKILL_MARKET_KEY; nothing was paid`,
      );
    const price = BigInt(preview.price.amount);
    if (price > maxPrice.atomic)
      throw new CliError(
        'price_above_limit',
        `skill ${preview.id} "${preview.title}" costs ${formatUsdc(preview.price)}, more than ${maxPrice.limit} allows; ` +
          `to pay it, run again with --max-price ${formatUsdc(preview.price).replace(/ USDC$/, '')}; nothing was paid`,
      );
    // Only the listed asset, for at most the listed price: a payment request for more is not signed.
    const spend = { network: preview.price.network, asset: preview.price.asset, maxAtomic: price };
    let paid: Response;
    try {
      paid = await this.payingFetch(wallet, spend, 2)(url);
    } catch (err) {
      if (isNetworkFailure(err)) throw unreachable(url, this.base, err);
      throw new CliError('payment_failed', `paying for skill ${preview.id}: ${(err as Error).message}`);
    }
    if (!paid.ok)
      throw await refusal(paid, { method: 'GET', url }, 'payment_failed', `paying for skill ${preview.id}: `);
    return { view: (await paid.json()) as FullView, access: 'paid' };
  }

  payments(token: string, limit = 20): Promise<{ items: Payment[]; nextCursor: string | null }> {
    return this.json(`/api/payments?limit=${limit}`, { token });
  }

  payment(id: string, token?: string): Promise<Payment> {
    return this.json<Payment>(`/api/payments/${encodeURIComponent(id)}`, { token });
  }

  /** Polls a payment until it is settled, failed or expired, or `timeoutMs` passes (then the last state). */
  async waitForPayment(id: string, timeoutMs: number, intervalMs = 500, token?: string): Promise<Payment> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const p = await this.payment(id, token);
      if (FINAL.has(p.status) || Date.now() >= deadline) return p;
      await new Promise((r) => setTimeout(r, Math.min(intervalMs, Math.max(0, deadline - Date.now()))));
    }
  }

  /** A GET of `url` as it answers, whatever its status; a network failure is `market_unreachable`. */
  private read(url: string): Promise<Response> {
    return this.fetchImpl(url, { headers: { accept: 'application/json' } }).catch((err) => {
      throw isNetworkFailure(err) ? unreachable(url, this.base, err) : err;
    });
  }

  /**
   * The x402 offer of a skill as an anonymous buyer is asked to pay it (the 402's PAYMENT-REQUIRED
   * requirements, each naming its asset's EIP-712 `extra`); undefined when the skill answers
   * anything but a 402 (free, taken down).
   */
  async paymentOffer(postId: string): Promise<PaymentRequirements[] | undefined> {
    const url = `${this.base}/api/posts/${encodeURIComponent(postId)}?view=full`;
    const res = await this.read(url);
    await res.body?.cancel();
    const header = res.headers.get('payment-required');
    if (res.status !== 402 || !header) return undefined;
    return decodePaymentRequiredHeader(header).accepts;
  }

  /** A purchase's refund request and refund (GET /api/purchases/{paymentId}/refund); undefined when it has neither. */
  async refundOf(paymentId: string): Promise<RefundState | undefined> {
    const url = `${this.base}/api/purchases/${encodeURIComponent(paymentId)}/refund`;
    const res = await this.read(url);
    if (res.status === 404) {
      await res.body?.cancel();
      return undefined;
    }
    if (!res.ok) throw await refusal(res, { method: 'GET', url });
    return (await res.json()) as RefundState;
  }

  search(query: string, limit = 20): Promise<{ didYouMean?: string; results: SearchHit[] }> {
    return this.json(`/api/discovery/search?q=${encodeURIComponent(query)}&limit=${limit}`);
  }

  /** fetch that answers a 402 by paying with `account` within `spend`, over x402 v2 or v1. */
  payingFetch(account: PrivateKeyAccount, spend: Spend, x402: X402Version): typeof fetch {
    return payingFetch(this.fetchImpl, account, spend, x402);
  }
}

/** The Agent Skills discovery draft's schema URI that this installer reads. */
export const DISCOVERY_DRAFT_SCHEMA = 'https://schemas.agentskills.io/discovery/0.2.0/schema.json';

type RawEntry = Omit<IndexEntryView, 'version'> & { version: number | string; versionNumber?: number };

/**
 * An index in either form, as the installer reads it. With the draft's `$schema`, an entry's
 * `digest` is its artifact's (`type`, `url`) and `skillDigest` the skill digest; without it (the
 * RFC v0.2.0 form), `digest` is the skill digest and `package` the archive. Any other `$schema`,
 * or an RFC major version other than 0, is refused (index_unsupported).
 */
export function readIndex(index: SkillsIndexView): SkillsIndexView {
  const draft = index.$schema !== undefined;
  if (draft && index.$schema !== DISCOVERY_DRAFT_SCHEMA)
    throw new CliError(
      'index_unsupported',
      `the discovery index follows ${index.$schema}, which this installer does not read`,
    );
  const major = /^(\d+)\./.exec(index.version ?? '')?.[1];
  if ((!draft && major !== '0') || !Array.isArray(index.skills))
    throw new CliError(
      'index_unsupported',
      `the discovery index is version ${index.version}, which this installer does not read`,
    );
  const skills = (index.skills as RawEntry[]).flatMap((e): IndexEntryView[] => {
    const skillDigest = draft ? e.skillDigest : (e.skillDigest ?? e.digest);
    const version = e.versionNumber ?? (typeof e.version === 'number' ? e.version : undefined);
    // An entry this installer cannot check (no skill digest, no version, an unknown artifact type) is skipped.
    if (!skillDigest || version === undefined) return [];
    if (draft && e.type !== 'skill-md' && e.type !== 'archive') return [];
    const artifact =
      draft && e.type && e.url
        ? { type: e.type, url: e.url, digest: e.digest }
        : e.package
          ? { type: 'archive' as const, url: e.package.url, digest: e.package.digest }
          : undefined;
    return [{ ...e, digest: skillDigest, version, ...(artifact ? { artifact } : {}) }];
  });
  return { ...index, skills };
}
