import { REPUTATION_REGISTRY_ABI } from '@skill-market/skill-protocol/reputation-registry-abi';
import type { Address, Log, PublicClient } from 'viem';
import { BlockNotFoundError, parseEventLogs } from 'viem';
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
import { FEEDBACK_TAG1, FEEDBACK_TAG2, starsToValue } from './review-terms.js';
import { feedbackUri, reviewEndpoint } from './reviews.use-cases.js';

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
  | 'malformed_feedback'
  | 'unknown_feedback_file'
  | 'feedback_uri_mismatch'
  | 'client_not_buyer'
  | 'wrong_agent'
  | 'value_mismatch'
  | 'fields_mismatch'
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
  f: {
    agentId: bigint;
    client: Address;
    value: bigint;
    valueDecimals: number;
    feedbackURI: string;
    tag1: string;
    tag2: string;
    endpoint: string;
    hash: string;
    malformed: boolean;
  },
): Promise<{ reviewId: string | null; reason: UnverifiedReason | null }> {
  // Only verified feedback names its review: nothing anyone else gives can touch a review's weight.
  const fail = (reason: UnverifiedReason) => ({ reviewId: null, reason });
  if (f.malformed) return fail('malformed_feedback');
  const review = await findReviewForFeedback(trx, f.hash);
  if (!review) return fail('unknown_feedback_file');
  if (f.feedbackURI !== feedbackUri(baseUrl, f.hash)) return fail('feedback_uri_mismatch');
  if (review.buyer_address !== f.client.toLowerCase() || review.payer !== f.client.toLowerCase())
    return fail('client_not_buyer');
  if (review.seller_token_id === null || BigInt(review.seller_token_id) !== f.agentId) return fail('wrong_agent');
  if (f.valueDecimals !== 0 || f.value !== BigInt(starsToValue(review.rating))) return fail('value_mismatch');
  if (f.tag1 !== FEEDBACK_TAG1 || f.tag2 !== FEEDBACK_TAG2 || f.endpoint !== reviewEndpoint(baseUrl, review.post_id))
    return fail('fields_mismatch');
  if (review.refunded_at) return fail('purchase_refunded');
  return { reviewId: review.id, reason: null };
}

const followerName = (chainId: number, registry: string) => `reputation:${chainId}:${registry}`;

/** The most characters of a chain string (a tag, an endpoint, a URI) the marketplace keeps. */
const CHAIN_TEXT_MAX = 1024;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/**
 * A string from an event as it can be stored: no NUL (PostgreSQL refuses it), no lone surrogate,
 * at most CHAIN_TEXT_MAX characters. Anyone can put anything in an event; one that needed changing
 * is kept, marked malformed, and never verified.
 */
export function chainText(raw: string): { text: string; changed: boolean } {
  const text = raw.replaceAll('\u0000', '').replace(LONE_SURROGATE, '\uFFFD').slice(0, CHAIN_TEXT_MAX);
  return { text, changed: text !== raw };
}

type RegistryEvent = ReturnType<typeof parseEventLogs<typeof REPUTATION_REGISTRY_ABI>>[number];
type Cursor = { block_number: string; block_hash: string } | undefined;

/** What one pass found on the chain, before anything is written. */
interface ChainReading {
  /** The cursor the reading started from: the pass writes only if it is still the cursor. */
  cursor: Cursor;
  /** Indexed blocks a reorganisation replaced. */
  forget: Array<{ block_number: string; block_hash: string }>;
  /** Where the cursor goes: the last block read and its hash; null to remove it. */
  next: { block: bigint; hash: string } | null | undefined;
  events: RegistryEvent[];
  range?: { from: bigint; to: bigint };
  more: boolean;
}

/**
 * One pass of the Reputation Registry follower: undoes what a reorganisation removed, then indexes
 * the NewFeedback and FeedbackRevoked events of the next confirmed blocks (at most `maxRange`),
 * verifying each feedback. The chain is read first, with no transaction open; the writes follow in
 * one transaction under an advisory lock (one pass at a time across processes), and only if the
 * cursor is still where the reading started. Resolves true when confirmed blocks remain to read.
 */
export async function followFeedback(deps: FollowerDeps): Promise<boolean> {
  const registry = deps.chain.reputationRegistry?.toLowerCase();
  if (!registry) return false;
  const name = followerName(deps.chain.chainId, registry);
  const reading = await readChain(deps, registry, await readCursor(deps.db, name));
  return deps.db.transaction().execute(async (trx) => {
    if (!(await tryFollowerLock(trx, name))) return false;
    const now = await readCursor(trx, name);
    // Another pass moved the cursor meanwhile: read again from where it is now.
    if (now?.block_number !== reading.cursor?.block_number || now?.block_hash !== reading.cursor?.block_hash)
      return true;
    const changed = new Set<string>();
    for (const b of reading.forget)
      for (const seller of await forgetBlock(trx, registry, b.block_number, b.block_hash)) changed.add(seller);
    for (const e of reading.events) {
      const seller = await indexEvent(trx, deps, registry, e);
      if (seller) changed.add(seller);
    }
    if (reading.next) await writeCursor(trx, name, reading.next.block, reading.next.hash);
    else if (reading.next === null) await trx.deleteFrom('chain_cursors').where('name', '=', name).execute();
    await announce(trx, changed);
    if (reading.events.length && reading.range)
      deps.log.info(
        { from: reading.range.from.toString(), to: reading.range.to.toString(), events: reading.events.length },
        'reputation feedback indexed',
      );
    return reading.more;
  });
}

/** The chain side of a pass: reorganisation, range, hashes and logs, read with no transaction open. */
async function readChain(deps: FollowerDeps, registry: string, cursor: Cursor): Promise<ChainReading> {
  const client = deps.chain.publicClient;
  const maxRange = deps.maxRange ?? 2_000n;
  const reorgDepth = deps.reorgDepth ?? 64n;
  const head = await client.getBlockNumber();
  const safe = head - BigInt(deps.confirmations);
  // A block that is not there (a reorganisation shortened the chain) is undefined; any other
  // failure of the node throws, so a flaky answer is never taken for a reorganisation.
  const hashAt = async (n: bigint) => {
    if (n > head || n < 0n) return undefined;
    try {
      return (await client.getBlock({ blockNumber: n })).hash ?? undefined;
    } catch (err) {
      if (err instanceof BlockNotFoundError) return undefined;
      throw err;
    }
  };
  const forget: ChainReading['forget'] = [];
  // The first block ever read: the configured one, else the confirmed head at the first pass. Once
  // a cursor exists, a reorganisation reads again from before it, down to block 0 if need be.
  const floor = deps.startBlock ?? 0n;
  let from = deps.startBlock ?? (safe > 0n ? safe : 0n);
  if (cursor) {
    const at = BigInt(cursor.block_number);
    from = at + 1n;
    if ((await hashAt(at)) !== cursor.block_hash) {
      // A reorganisation: forget every indexed block it replaced, and read again from before it.
      const since = at > reorgDepth ? at - reorgDepth : 0n;
      for (const b of await indexedBlocksFrom(deps.db, registry, since))
        if ((await hashAt(BigInt(b.block_number))) !== b.block_hash) forget.push(b);
      from = since > floor ? since : floor;
      deps.log.warn({ block: cursor.block_number, from: from.toString() }, 'reputation registry reorganised');
    }
  }
  if (from > safe) {
    // Nothing confirmed to read yet. After a reorganisation, step the cursor back so a later pass
    // reads again from before it.
    if (!cursor || from > BigInt(cursor.block_number))
      return { cursor, forget, next: undefined, events: [], more: false };
    const hash = await hashAt(from - 1n);
    return { cursor, forget, next: hash ? { block: from - 1n, hash } : null, events: [], more: false };
  }
  const to = from + maxRange - 1n < safe ? from + maxRange - 1n : safe;
  const toHash = await hashAt(to);
  if (!toHash) throw new Error(`block ${to} vanished before it was read; the next pass reads it again`);
  const logs = await client.getLogs({ address: registry as Address, fromBlock: from, toBlock: to });
  // The logs must be of the chain the cursor will name: a reorganisation while they were read
  // leaves them for the next pass.
  if ((await hashAt(to)) !== toHash || logs.some((l) => l.blockNumber === to && l.blockHash !== toHash))
    throw new Error(`block ${to} changed while it was read; the next pass reads it again`);
  const events = parseEventLogs({ abi: REPUTATION_REGISTRY_ABI, logs: logs as Log[], strict: true });
  return { cursor, forget, next: { block: to, hash: toHash }, events, range: { from, to }, more: to < safe };
}

/** Writes one event: a NewFeedback verified against the ledger, or a FeedbackRevoked. Returns its seller. */
async function indexEvent(
  trx: Executor,
  deps: FollowerDeps,
  registry: string,
  e: RegistryEvent,
): Promise<string | null> {
  if (!e.blockHash || e.blockNumber === null || !e.transactionHash || e.logIndex === null) return null;
  if (e.eventName === 'FeedbackRevoked') {
    const a = e.args;
    const key = {
      chainId: String(deps.chain.chainId),
      registry,
      agentTokenId: a.agentId.toString(),
      client: a.clientAddress.toLowerCase(),
      index: a.feedbackIndex.toString(),
    };
    return markRevoked(trx, key, e.blockNumber.toString(), e.blockHash);
  }
  if (e.eventName !== 'NewFeedback') return null;
  const a = e.args;
  // The registry is shared: feedback about agents that sell nothing here is not ours to keep.
  const seller = await findSellerByToken(trx, a.agentId.toString());
  if (!seller) return null;
  const hash = a.feedbackHash.toLowerCase();
  const [tag1, tag2, endpoint, uri] = [a.tag1, a.tag2, a.endpoint, a.feedbackURI].map(chainText) as [
    ReturnType<typeof chainText>,
    ReturnType<typeof chainText>,
    ReturnType<typeof chainText>,
    ReturnType<typeof chainText>,
  ];
  const check = await verifyFeedback(trx, deps.baseUrl, {
    agentId: a.agentId,
    client: a.clientAddress,
    value: a.value,
    valueDecimals: a.valueDecimals,
    feedbackURI: uri.text,
    tag1: tag1.text,
    tag2: tag2.text,
    endpoint: endpoint.text,
    hash,
    malformed: tag1.changed || tag2.changed || endpoint.changed || uri.changed,
  });
  await upsertFeedback(trx, {
    chain_id: String(deps.chain.chainId),
    registry,
    agent_token_id: a.agentId.toString(),
    seller_id: seller.id,
    client_address: a.clientAddress.toLowerCase(),
    feedback_index: a.feedbackIndex.toString(),
    value: a.value.toString(),
    value_decimals: a.valueDecimals,
    tag1: tag1.text,
    tag2: tag2.text,
    endpoint: endpoint.text,
    feedback_uri: uri.text,
    feedback_hash: hash,
    block_number: e.blockNumber.toString(),
    block_hash: e.blockHash,
    tx_hash: e.transactionHash,
    log_index: e.logIndex,
    review_id: check.reviewId,
    verification: check.reason ? 'unverified' : 'verified',
    reason: check.reason,
  });
  return seller.id;
}

/**
 * A seller whose on-chain feedback changed has its documents (reputation.json, rating.json) rendered
 * again: one event per pass, however many of its events the pass read (the dispatcher coalesces
 * them further). A verified feedback's skill is marked changed by the database with its rating.
 */
async function announce(trx: Executor, sellers: Set<string>) {
  for (const agentId of sellers) await insertEvent(trx, 'feedback.indexed', { agentId });
}
