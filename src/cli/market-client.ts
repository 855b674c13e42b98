import type { PrivateKeyAccount } from 'viem/accounts';
import { wrapFetchWithPayment, x402Client } from '@x402/fetch';
import { registerExactEvmScheme } from '@x402/evm/exact/client';
import { wrapFetchWithSIWx } from '@x402/extensions/sign-in-with-x';
import type { Network } from '@x402/core/types';
import { CliError, unreachable } from './cli-error.js';
import type { FullView, IndexEntryView, PreviewView, SkillsIndexView } from '@skill-market/skill-protocol/responses';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const INDEX_PATH = '/.well-known/agent-skills/index.json';

/** How the full skill was obtained: free to read, read again by the wallet that bought it, or bought now. */
export type Access = 'free' | 're-read' | 'paid';

async function problemOf(res: Response): Promise<string> {
  const text = await res.text().catch(() => '');
  try {
    const body = JSON.parse(text) as { code?: string; detail?: string; error?: string };
    return [body.code ?? body.error, body.detail].filter(Boolean).join(': ') || `HTTP ${res.status}`;
  } catch {
    return `HTTP ${res.status}`;
  }
}

/** A marketplace at `base`, as the installer talks to it. */
export class MarketClient {
  private index?: SkillsIndexView;

  constructor(
    readonly base: string,
    private readonly fetchImpl: typeof fetch = fetch,
  ) {}

  private async getJson<T>(path: string, what: string): Promise<T> {
    let res: Response;
    try {
      res = await this.fetchImpl(`${this.base}${path}`, { headers: { accept: 'application/json' } });
    } catch (err) {
      throw unreachable(`${this.base}${path}`, this.base, err);
    }
    if (res.status === 404) throw new CliError('skill_not_found', `${what} not found at ${this.base}`);
    if (!res.ok) throw new CliError('market_error', `${what}: ${await problemOf(res)}`);
    return (await res.json()) as T;
  }

  /** The discovery index (read once per run). */
  async skillsIndex(): Promise<SkillsIndexView> {
    if (!this.index) {
      const index = await this.getJson<SkillsIndexView>(INDEX_PATH, 'the discovery index');
      const major = /^(\d+)\./.exec(index.version ?? '')?.[1];
      if (major !== '0' || !Array.isArray(index.skills))
        throw new CliError(
          'index_unsupported',
          `the discovery index is version ${index.version}, which this installer does not read`,
        );
      this.index = index;
    }
    return this.index;
  }

  /** The index entry of a post id, if the index lists it (an unpublished skill is no longer listed). */
  async entryOf(postId: string): Promise<IndexEntryView | undefined> {
    return (await this.skillsIndex()).skills.find((s) => s.id === postId.toLowerCase());
  }

  /**
   * The post a reference names: a post id, a skill name, or `seller/name` when several sellers
   * publish a skill of that name.
   */
  async resolve(ref: string): Promise<{ postId: string; entry?: IndexEntryView }> {
    if (UUID.test(ref)) return { postId: ref.toLowerCase(), entry: await this.entryOf(ref) };
    const [seller, name] = ref.includes('/') ? ref.split('/', 2) : [undefined, ref];
    const matches = (await this.skillsIndex()).skills.filter(
      (s) => s.name === name && (seller === undefined || s.seller.handle === seller),
    );
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

  preview(postId: string): Promise<PreviewView> {
    return this.getJson<PreviewView>(`/api/posts/${postId}`, `skill ${postId}`);
  }

  /**
   * The full view: read as is when free (or the wallet's own), read again with a Sign-In-With-X
   * proof when the wallet bought it before (nothing charged), otherwise bought over x402 for at
   * most `maxPrice.atomic` of the listed asset (`maxPrice.limit` names the limit in a refusal).
   */
  async fullView(
    preview: PreviewView,
    wallet: PrivateKeyAccount | undefined,
    maxPrice: { atomic: bigint; limit: string },
  ): Promise<{ view: FullView; access: Access }> {
    const url = `${this.base}/api/posts/${preview.id}?view=full`;
    const first = wallet ? await wrapFetchWithSIWx(this.fetchImpl, wallet)(url) : await this.fetchImpl(url);
    if (first.ok) return { view: (await first.json()) as FullView, access: preview.price.free ? 'free' : 're-read' };
    if (first.status !== 402)
      throw new CliError('market_error', `reading skill ${preview.id}: ${await problemOf(first)}`);
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
    const client = new x402Client();
    registerExactEvmScheme(client, { signer: wallet, networks: [preview.price.network as Network] });
    // Only the listed asset, for at most the listed price: a payment request for more is not signed.
    client.setSpendControls({
      allowedAssets: [
        {
          network: preview.price.network as Network,
          asset: preview.price.asset,
          maxAmountPerPayment: price.toString(),
        },
      ],
    });
    let paid: Response;
    try {
      paid = await wrapFetchWithPayment(this.fetchImpl, client)(url);
    } catch (err) {
      throw new CliError('payment_failed', `paying for skill ${preview.id}: ${(err as Error).message}`);
    }
    if (!paid.ok) throw new CliError('payment_failed', `paying for skill ${preview.id}: ${await problemOf(paid)}`);
    return { view: (await paid.json()) as FullView, access: 'paid' };
  }
}

/** An atomic amount as USDC with its decimals, e.g. `1.5 USDC`. */
export function formatUsdc(price: { amount: string; decimals: number }): string {
  const atomic = BigInt(price.amount);
  const unit = 10n ** BigInt(price.decimals);
  const fraction = (atomic % unit).toString().padStart(price.decimals, '0').replace(/0+$/, '');
  return `${atomic / unit}${fraction ? `.${fraction}` : ''} USDC`;
}

/** `2.5` (USDC) as atomic units of a 6-decimal token. */
export function parseUsdc(text: string, decimals = 6): bigint {
  const m = /^(\d+)(?:\.(\d+))?$/.exec(text.trim());
  if (!m || (m[2]?.length ?? 0) > decimals)
    throw new CliError('invalid_option', `--max-price must be an amount in USDC such as 2.5, not "${text}"`);
  return BigInt(m[1] ?? '0') * 10n ** BigInt(decimals) + BigInt((m[2] ?? '').padEnd(decimals, '0') || '0');
}
