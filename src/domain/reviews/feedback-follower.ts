import { REPUTATION_REGISTRY_ABI } from '@skill-market/skill-protocol/reputation-registry-abi';
import type { Address, Log, PublicClient } from 'viem';
import { parseEventLogs } from 'viem';
import { sql } from 'kysely';
import type { Db, Executor } from '../../data/db.js';
import { insertEvent } from '../../data/events.repository.js';
import {
  findReviewForFeedback,
  findSellerByToken,
  forgetBlock,
  indexedBlocksFrom,
  markRevoked,
  readCursor,
  tryFollowerLock,
  upsertFeedback,
  writeCursor,
} from '../../data/onchain-feedback.repository.js';
import type { Logger } from '../../platform/logger.js';
import { starsToValue } from './review-terms.js';
import { feedbackUri } from './reviews.use-cases.js';

export interface FollowerDeps {
  db: Db;
  chain: { chainId: number; reputationRegistry: Address | undefined; publicClient: PublicClient };
  baseUrl: string;
  /** Blocks a log must have on top of it before it is indexed. */
  confirmations: number;
  /** Where a follower with no cursor starts; unset, at the confirmed head. */
  startBlock?: bigint;
  log: Logger;
  /** The most blocks one pass reads (default 2,000). */
  maxRange?: bigint;
  /** How far back a reorganisation is looked for and undone (default 64 blocks). */
  reorgDepth?: bigint;
}

/** Why feedback did not verify: each a stable code, published with it. */
export type UnverifiedReason =
  | 'unknown_feedback_file'
  | 'feedback_uri_mismatch'
  | 'client_not_buyer'
  | 'wrong_agent'
  | 'value_mismatch'
  | 'payment_not_to_seller'
  | 'purchase_refunded';

/**
 * Checks one NewFeedback against the ledger: the file it commits to is a review the marketplace
 * holds, given by the wallet that wrote it, about the seller it was paid to, with the value the
 * review's stars give, for a purchase not refunded. Anything else is unverified with its reason.
 */
export async function verifyFeedback(
  trx: Executor,
  baseUrl: string,
  f: { agentId: bigint; client: Address; value: bigint; valueDecimals: number; feedbackURI: string; hash: string },
): Promise<{ reviewId: string | null; reason: UnverifiedReason | null }> {
  const review = await findReviewForFeedback(trx, f.hash);
  if (!review) return { reviewId: null, reason: 'unknown_feedback_file' };
  const fail = (reason: UnverifiedReason) => ({ reviewId: review.id, reason });
  if (f.feedbackURI !== feedbackUri(baseUrl, f.hash)) return fail('feedback_uri_mismatch');
  if (review.buyer_address !== f.client.toLowerCase() || review.payer !== f.client.toLowerCase())
    return fail('client_not_buyer');
  if (review.seller_token_id === null || BigInt(review.seller_token_id) !== f.agentId) return fail('wrong_agent');
  if (f.valueDecimals !== 0 || f.value !== BigInt(starsToValue(review.rating))) return fail('value_mismatch');
  if (review.refunded_at) return fail('purchase_refunded');
  return { reviewId: review.id, reason: null };
}

const followerName = (chainId: number, registry: string) => `reputation:${chainId}:${registry}`;

/**
 * One pass of the Reputation Registry follower: undoes what a reorganisation removed, then indexes
 * the NewFeedback and FeedbackRevoked events of the next confirmed blocks (at most `maxRange`),
 * verifying each feedback. An advisory lock lets one pass run at a time across processes.
 * Resolves true when confirmed blocks remain to read.
 */
export async function followFeedback(deps: FollowerDeps): Promise<boolean> {
  const registry = deps.chain.reputationRegistry?.toLowerCase();
  if (!registry) return false;
  const client = deps.chain.publicClient;
  const name = followerName(deps.chain.chainId, registry);
  const maxRange = deps.maxRange ?? 2_000n;
  const reorgDepth = deps.reorgDepth ?? 64n;
  const head = await client.getBlockNumber();
  const safe = head - BigInt(deps.confirmations);
  const hashAt = async (n: bigint) => {
    if (n > head) return undefined;
    return (await client.getBlock({ blockNumber: n }).catch(() => undefined))?.hash ?? undefined;
  };

  return deps.db.transaction().execute(async (trx) => {
    if (!(await tryFollowerLock(trx, name))) return false;
    const changed = new Set<string>();
    const cursor = await readCursor(trx, name);
    const start = deps.startBlock ?? (safe > 0n ? safe : 0n);
    let from = start;
    if (cursor) {
      const at = BigInt(cursor.block_number);
      from = at + 1n;
      if ((await hashAt(at)) !== cursor.block_hash) {
        // A reorganisation: forget every indexed block it replaced, and read again from before it.
        const since = at > reorgDepth ? at - reorgDepth : 0n;
        for (const b of await indexedBlocksFrom(trx, registry, since)) {
          if ((await hashAt(BigInt(b.block_number))) === b.block_hash) continue;
          for (const seller of await forgetBlock(trx, registry, b.block_number, b.block_hash)) changed.add(seller);
        }
        from = since > start ? since : start;
        deps.log.warn({ block: cursor.block_number, from: from.toString() }, 'reputation registry reorganised');
      }
    }
    if (from > safe) {
      if (changed.size || (cursor && from <= BigInt(cursor.block_number))) {
        // Nothing confirmed to read again yet: step the cursor back so the next pass does.
        const back = from - 1n;
        const hash = back >= 0n ? await hashAt(back) : undefined;
        if (hash) await writeCursor(trx, name, back, hash);
        else await trx.deleteFrom('chain_cursors').where('name', '=', name).execute();
      }
      await announce(trx, changed);
      return false;
    }
    const to = from + maxRange - 1n < safe ? from + maxRange - 1n : safe;
    const logs = await client.getLogs({ address: registry as Address, fromBlock: from, toBlock: to });
    const events = parseEventLogs({ abi: REPUTATION_REGISTRY_ABI, logs: logs as Log[], strict: true });
    for (const e of events) {
      if (!e.blockHash || e.blockNumber === null || !e.transactionHash || e.logIndex === null) continue;
      if (e.eventName === 'NewFeedback') {
        const a = e.args;
        const seller = await findSellerByToken(trx, a.agentId.toString());
        const hash = a.feedbackHash.toLowerCase();
        const check = await verifyFeedback(trx, deps.baseUrl, {
          agentId: a.agentId,
          client: a.clientAddress,
          value: a.value,
          valueDecimals: a.valueDecimals,
          feedbackURI: a.feedbackURI,
          hash,
        });
        await upsertFeedback(trx, {
          chain_id: String(deps.chain.chainId),
          registry,
          agent_token_id: a.agentId.toString(),
          seller_id: seller?.id ?? null,
          client_address: a.clientAddress.toLowerCase(),
          feedback_index: a.feedbackIndex.toString(),
          value: a.value.toString(),
          value_decimals: a.valueDecimals,
          tag1: a.tag1,
          tag2: a.tag2,
          endpoint: a.endpoint,
          feedback_uri: a.feedbackURI,
          feedback_hash: hash,
          block_number: e.blockNumber.toString(),
          block_hash: e.blockHash,
          tx_hash: e.transactionHash,
          log_index: e.logIndex,
          review_id: check.reviewId,
          verification: check.reason ? 'unverified' : 'verified',
          reason: check.reason,
        });
        if (seller) changed.add(seller.id);
      } else if (e.eventName === 'FeedbackRevoked') {
        const a = e.args;
        const seller = await markRevoked(
          trx,
          {
            chainId: String(deps.chain.chainId),
            registry,
            agentTokenId: a.agentId.toString(),
            client: a.clientAddress.toLowerCase(),
            index: a.feedbackIndex.toString(),
          },
          e.blockNumber.toString(),
          e.blockHash,
        );
        if (seller) changed.add(seller);
      }
    }
    const toHash = await hashAt(to);
    if (!toHash) throw new Error(`block ${to} vanished while it was read; the next pass reads it again`);
    await writeCursor(trx, name, to, toHash);
    await announce(trx, changed);
    if (events.length)
      deps.log.info({ from: from.toString(), to: to.toString(), events: events.length }, 'reputation feedback indexed');
    return to < safe;
  });
}

/**
 * A seller whose on-chain feedback changed has its documents rendered again, and its published
 * skills' reviews.json (which list the unverified feedback about their seller) with them: once per
 * pass, however many events the pass read.
 */
async function announce(trx: Executor, sellers: Set<string>) {
  if (!sellers.size) return;
  for (const agentId of sellers) await insertEvent(trx, 'feedback.indexed', { agentId });
  await trx
    .updateTable('posts')
    .set({ change_txid: sql`pg_current_xact_id()` })
    .where('author_id', 'in', [...sellers])
    .where('status', '=', 'published')
    .execute();
}
