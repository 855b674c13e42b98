import { REPUTATION_REGISTRY_ABI } from '@skill-market/skill-protocol/reputation-registry-abi';
import {
  giveFeedbackArgs,
  reviewTypedData,
  revocationTypedData,
  type OnChainFeedback,
} from '@skill-market/skill-protocol/review-typed-data';
import {
  createPublicClient,
  createWalletClient,
  defineChain,
  getAddress,
  http,
  isAddressEqual,
  parseEventLogs,
  type Address,
  type Hex,
} from 'viem';
import type { PrivateKeyAccount } from 'viem/accounts';
import type { Ctx } from './agent-actions.js';
import type { AgentFile } from './agent-home.js';
import { CliError } from './cli-error.js';
import { shown } from './terminal-text.js';

/**
 * `skill-market review`: a buyer's review of a skill it bought, signed by the wallet that paid
 * (EIP-712 SkillReview, docs/reputation.md) and, when the seller has an ERC-8004 identity, given
 * on the Reputation Registry from that wallet; its withdrawal (off the market and off the chain);
 * the seller's one public response.
 */

export interface ReviewOptions {
  stars?: string;
  text?: string;
  payment?: string;
  revoke?: boolean;
  /** false with --no-chain: nothing is sent to the chain. */
  chain: boolean;
  rpcUrl?: string;
}

interface WrittenReview {
  id: string;
  revision: number;
  rating: number;
  feedbackURI: string;
  feedbackHash: string;
  onChain: OnChainFeedback | null;
}

interface ReviewsDocument {
  reviews: Array<{
    buyer: string;
    paymentId: string;
    onChain: { status: string; txHash: Hex | null; feedbackIndex: number | null };
  }>;
}

/** A purchase as a review names it: the payment, its settlement transaction, the version bought, its chain. */
interface Purchase {
  paymentId: string;
  transaction: string;
  version: number;
  chainId: number;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const now = () => Math.floor(Date.now() / 1000);

/** The chain id of a CAIP-2 `eip155:<id>` network. */
export function chainIdOf(network: string): number {
  const id = /^eip155:(\d+)$/.exec(network)?.[1];
  if (!id) throw new CliError('network_unsupported', shown`the market settles on ${network}, not an EVM chain`);
  return Number(id);
}

function assertSkillId(postId: string) {
  if (!UUID.test(postId))
    throw new CliError(
      'invalid_argument',
      shown`"${postId}" is not a skill post id (a UUID, as buy and install print)`,
    );
}

export async function review(c: Ctx, handle: string, postId: string, opts: ReviewOptions) {
  assertSkillId(postId);
  if (opts.revoke) return revoke(c, handle, postId, opts);
  const rating = Number(opts.stars);
  if (opts.stars === undefined || !Number.isInteger(rating) || rating < 1 || rating > 5)
    throw new CliError('invalid_option', '--stars must be a whole number of stars from 1 to 5 (or pass --revoke)');
  const agent = await c.home.load(handle);
  const wallet = await c.home.wallet(agent);
  const bought = await purchaseOf(c, agent, wallet.address, postId, opts.payment);
  const message = {
    paymentId: bought.paymentId,
    transaction: bought.transaction,
    postId: postId.toLowerCase(),
    version: bought.version,
    rating,
    text: opts.text ?? '',
    issuedAt: now(),
  };
  const signature = await wallet.signTypedData(reviewTypedData(bought.chainId, message));
  // Signed by the wallet that paid, the review needs no token: the market checks the signature.
  const written = await c.api.json<WrittenReview>(`/api/posts/${message.postId}/reviews`, {
    json: { paymentId: message.paymentId, rating, text: message.text, issuedAt: message.issuedAt, signature },
  });
  c.io.out(shown`reviewed ${postId}: ${written.rating} star(s), signed by ${wallet.address} (EIP-712 SkillReview)`);
  c.io.out(shown`  review        ${written.id}`);
  c.io.out(shown`  revision      ${written.revision}`);
  c.io.out(shown`  payment       ${bought.paymentId}`);
  c.io.out(shown`  feedback URI  ${written.feedbackURI}`);
  c.io.out(shown`  feedback hash ${written.feedbackHash}`);
  const o = written.onChain;
  if (!o) return c.io.out('  on chain      no: the seller has no ERC-8004 identity');
  if (!opts.chain)
    return c.io.out(shown`  on chain      not sent (--no-chain): giveFeedback to ${o.registry} for agent ${o.agentId}`);
  const receipt = await giveOnChain(c, wallet, bought.chainId, opts, written.id, (from) =>
    from.writeContract({
      address: o.registry,
      abi: REPUTATION_REGISTRY_ABI,
      functionName: 'giveFeedback',
      args: giveFeedbackArgs(o),
    }),
  );
  const [given] = parseEventLogs({ abi: REPUTATION_REGISTRY_ABI, logs: receipt.logs, eventName: 'NewFeedback' });
  c.io.out(shown`  on chain      giveFeedback in transaction ${receipt.transactionHash}`);
  c.io.out(
    shown`                registry ${o.registry}, agent ${o.agentId}, feedback index ${given?.args.feedbackIndex ?? '?'}`,
  );
}

/**
 * Sends a review's giveFeedback. The review is written on the market by then: a failure says so,
 * and running the command again writes a new revision and gives that one.
 */
async function giveOnChain(
  c: Ctx,
  wallet: PrivateKeyAccount,
  chainId: number,
  opts: ReviewOptions,
  reviewId: string,
  write: Parameters<ReviewChain['send']>[0],
) {
  try {
    return await (await chainOf(c, wallet, chainId, opts.rpcUrl)).send(write);
  } catch (err) {
    if (!(err instanceof CliError)) throw err;
    throw new CliError(
      err.code,
      shown`review ${reviewId} is written on the market, not on chain: ${err.message}; run the command again to give a new revision on chain`,
    );
  }
}

/**
 * Withdraws the agent's review of a skill. Feedback given on chain is revoked first, from the
 * wallet that gave it, and then the review on the market: the market drops the review from
 * reviews.json, where its feedback index is read, so a command stopped half-way and run again
 * still finds the index (and skips a feedback already revoked).
 */
async function revoke(c: Ctx, handle: string, postId: string, opts: ReviewOptions) {
  const agent = await c.home.load(handle);
  const wallet = await c.home.wallet(agent);
  const bought = await purchaseOf(c, agent, wallet.address, postId, opts.payment);
  const doc = await c.api.json<ReviewsDocument>(`/api/posts/${postId.toLowerCase()}/reviews.json`);
  const mine = doc.reviews.find((r) => ADDRESS.test(r.buyer) && isAddressEqual(r.buyer as Address, wallet.address));
  const onChain = mine?.onChain;
  if (onChain?.status === 'verified' && onChain.txHash && onChain.feedbackIndex !== null) {
    const index = BigInt(onChain.feedbackIndex);
    if (opts.chain) await revokeOnChain(c, wallet, bought.chainId, onChain.txHash, index, opts);
    else c.io.out(shown`on chain: feedback ${index} left as it is (--no-chain)`);
  } else if (onChain?.status === 'revoked')
    c.io.out(shown`on chain: feedback ${onChain.feedbackIndex} is revoked already`);
  else c.io.out('on chain: nothing to revoke (reviews.json shows no verified on-chain feedback of this review)');
  const issuedAt = now();
  const message = { postId: postId.toLowerCase(), paymentId: bought.paymentId, issuedAt };
  const signature = await wallet.signTypedData(revocationTypedData(bought.chainId, message));
  const revoked = await c.api.json<{ id: string; revokedAt: string }>(`/api/posts/${message.postId}/reviews/revoke`, {
    json: { paymentId: bought.paymentId, issuedAt, signature },
  });
  c.io.out(shown`revoked review ${revoked.id} of ${postId} at ${revoked.revokedAt}`);
}

/**
 * `revokeFeedback` of the feedback given in `txHash` at `index`: the transaction's NewFeedback
 * log names the registry and the seller's agent id, and must be this wallet's.
 */
async function revokeOnChain(
  c: Ctx,
  wallet: PrivateKeyAccount,
  chainId: number,
  txHash: Hex,
  index: bigint,
  opts: ReviewOptions,
) {
  const chain = await chainOf(c, wallet, chainId, opts.rpcUrl);
  const { logs } = await chain.read((from) => from.getTransactionReceipt({ hash: txHash }));
  const feedback = parseEventLogs({ abi: REPUTATION_REGISTRY_ABI, logs, eventName: 'NewFeedback' }).find(
    (l) => isAddressEqual(l.args.clientAddress, wallet.address) && l.args.feedbackIndex === index,
  );
  if (!feedback)
    throw new CliError(
      'feedback_not_found',
      shown`transaction ${txHash} holds no feedback ${index} by ${wallet.address}; nothing was revoked`,
    );
  const { agentId } = feedback.args;
  const [, , , , isRevoked] = await chain.read((from) =>
    from.readContract({
      address: feedback.address,
      abi: REPUTATION_REGISTRY_ABI,
      functionName: 'readFeedback',
      args: [agentId, wallet.address, index],
    }),
  );
  if (isRevoked) return c.io.out(`on chain: feedback ${index} of agent ${agentId} is revoked already`);
  const receipt = await chain.send((from) =>
    from.writeContract({
      address: feedback.address,
      abi: REPUTATION_REGISTRY_ABI,
      functionName: 'revokeFeedback',
      args: [agentId, index],
    }),
  );
  c.io.out(
    shown`on chain: revokeFeedback(${agentId}, ${index}) in transaction ${receipt.transactionHash} (registry ${getAddress(feedback.address)})`,
  );
}

/** The seller's one public response to a buyer's review of its skill. */
export async function respond(c: Ctx, handle: string, postId: string, buyer: string, opts: { text: string }) {
  assertSkillId(postId);
  if (!ADDRESS.test(buyer))
    throw new CliError('invalid_argument', shown`"${buyer}" is not a wallet address (0x and 40 hex digits)`);
  const agent = await c.home.load(handle);
  if (!agent.token)
    throw new CliError('not_logged_in', `@${handle} has no token in ${c.home.dir}: run "skill-market login ${handle}"`);
  const answer = await c.api.json<{ buyer: string; text: string }>(
    `/api/posts/${postId.toLowerCase()}/reviews/${buyer}/response`,
    { token: agent.token, json: { text: opts.text } },
  );
  c.io.out(shown`responded to ${answer.buyer}'s review of ${postId}`);
  c.io.out(shown`  response      ${answer.text}`);
}

/**
 * The purchase a review names: `paymentId` as given, else the agent's newest settled purchase of
 * the skill that was not refunded (from its payments, which needs its token). Its signed receipt
 * says what it bought (the skill, the version) and its settlement transaction.
 */
async function purchaseOf(
  c: Ctx,
  agent: AgentFile,
  wallet: Address,
  postId: string,
  paymentId: string | undefined,
): Promise<Purchase> {
  const id = (paymentId ?? (await findPurchase(c, agent, wallet, postId))).toLowerCase();
  if (!UUID.test(id)) throw new CliError('invalid_option', shown`--payment must be a payment id (a UUID), not "${id}"`);
  const [payment, receipt] = await Promise.all([
    c.api.payment(id),
    c.api.json<{ purchase?: { transaction: string; postId: string; version: number } | null }>(
      `/api/payments/${id}/receipt`,
    ),
  ]);
  if (receipt.purchase?.postId.toLowerCase() !== postId.toLowerCase())
    throw new CliError('payment_not_for_skill', shown`payment ${id} did not buy skill ${postId}`);
  return {
    paymentId: id,
    transaction: receipt.purchase.transaction,
    version: receipt.purchase.version,
    chainId: chainIdOf(payment.network),
  };
}

/** The agent's newest settled, unrefunded purchase of `postId`, from the payments it made (newest first). */
async function findPurchase(c: Ctx, agent: AgentFile, wallet: Address, postId: string): Promise<string> {
  if (!agent.token)
    throw new CliError(
      'not_logged_in',
      `@${agent.handle} has no token to look its purchases up with: run "skill-market login ${agent.handle}" or pass --payment`,
    );
  type Listed = { id: string; status: string; purpose: string; resource: string | null; payer?: string };
  let cursor: string | null = null;
  do {
    const query: string = cursor ? `&cursor=${encodeURIComponent(cursor)}` : '';
    const page: { items: Listed[]; nextCursor: string | null } = await c.api.json(`/api/payments?limit=100${query}`, {
      token: agent.token,
    });
    for (const p of page.items) {
      const ofSkill =
        p.purpose === 'purchase' &&
        p.status === 'settled' &&
        p.payer !== undefined &&
        isAddressEqual(p.payer as Address, wallet) &&
        (p.resource ?? '').toLowerCase().includes(`/api/posts/${postId.toLowerCase()}`);
      if (ofSkill && (await c.api.refundOf(p.id))?.refund?.status !== 'settled') return p.id;
    }
    cursor = page.nextCursor;
  } while (cursor);
  throw new CliError(
    'no_purchase',
    `@${agent.handle} (${wallet}) has no settled, unrefunded purchase of skill ${postId} at ${c.api.base}: buy it first, or pass --payment`,
  );
}

type ReviewChain = Awaited<ReturnType<typeof chainOf>>;

/**
 * The chain reviews are given on, for `wallet`: --rpc-url, SKILL_MARKET_RPC_URL, or the one the
 * market's development faucet names (which also tops the wallet's gas up). It must be the chain
 * the purchase settled on, as the review's signature is bound to it.
 */
async function chainOf(c: Ctx, wallet: PrivateKeyAccount, chainId: number, rpcOption: string | undefined) {
  const rpcUrl = rpcOption ?? c.io.env.SKILL_MARKET_RPC_URL ?? (await c.api.faucet(wallet.address, 1n))?.rpcUrl;
  if (!rpcUrl)
    throw new CliError(
      'chain_unknown',
      `${c.api.base} has no development faucet naming its chain: pass --rpc-url (or set SKILL_MARKET_RPC_URL), or --no-chain`,
    );
  const transport = http(rpcUrl);
  const chain = defineChain({
    id: chainId,
    name: `eip155:${chainId}`,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  });
  const reader = createPublicClient({ chain, transport });
  const writer = createWalletClient({ account: wallet, chain, transport });
  const failed = (err: unknown) =>
    new CliError(
      'chain_failed',
      `at ${rpcUrl}: ${(err as { shortMessage?: string }).shortMessage ?? (err as Error).message}`,
    );
  const actual = await reader.getChainId().catch((err) => {
    throw failed(err);
  });
  if (actual !== chainId)
    throw new CliError('chain_mismatch', `${rpcUrl} is chain ${actual}, not ${chainId} where the purchase settled`);
  return {
    /** A read of the chain (`read`), its failure a `chain_failed`. */
    async read<T>(read: (from: typeof reader) => Promise<T>): Promise<T> {
      return read(reader).catch((err) => {
        throw failed(err);
      });
    },
    /** Sends a transaction from the wallet (`write`) and waits for it to succeed. */
    async send(write: (from: typeof writer) => Promise<Hex>) {
      try {
        const hash = await write(writer);
        const receipt = await reader.waitForTransactionReceipt({ hash });
        if (receipt.status !== 'success') throw new Error(`transaction ${hash} reverted`);
        return receipt;
      } catch (err) {
        throw failed(err);
      }
    },
  };
}
