import { checksummed } from '../../platform/chain/checksum.js';
import { defineDocument, JSON_TYPE } from '../document.js';
import { boolean, integer, nullable, object, string } from '../schema-parts.js';
import { EXAMPLE_SITE, EXAMPLE_TIME } from '../examples.js';
import type { SiteInfo } from '../site-info.js';
import type { Sale } from '../../data/schema.js';
import { AGENT_DOCUMENT_CACHE } from './agent-document-cache.js';

/** A receipt as signed for a settled payment (x402 offer-receipt, EIP-712). */
export interface SignedReceiptView {
  format: 'eip712';
  payload: {
    version: number;
    network: string;
    resourceUrl: string;
    payer: string;
    issuedAt: number;
    transaction: string;
  };
  signature: string;
}

/** A mirrored sale: the sale, the payment it was paid with, the wallet paid and the payment's signed receipt. */
export type ReputationSale = Sale & { payment_id: string; pay_to: string; receipt: SignedReceiptView };

/** A trust event besides a sale (docs/reputation.md): a review, a response, a refund, on-chain feedback. */
export interface TrustEvent {
  kind:
    | 'Review'
    | 'ReviewRevoked'
    | 'SellerResponse'
    | 'RefundRequested'
    | 'RefundDeclined'
    | 'Refunded'
    | 'NewFeedback';
  id: string;
  occurred_at: Date;
  client_address: string;
  post_id: string | null;
  details: Record<string, unknown>;
}

/** The newest sales mirrored (at most REPUTATION_LIMIT, newest first) and whose they are. */
export interface ReputationView {
  sales: readonly ReputationSale[];
  /** The newest trust events (at most REPUTATION_LIMIT, newest first). */
  events?: readonly TrustEvent[];
  tokenId: string | null;
  site: SiteInfo;
}

/** How many of an agent's sales its reputation mirror shows. */
export const REPUTATION_LIMIT = 100;

/**
 * The `proofOfPayment` of ERC-8004 feedback for a sale (who paid whom, on which chain, in which
 * transaction) with the marketplace's signed receipt of that payment, which a reader verifies
 * against the receipt key the site AgentCard publishes.
 */
const proofOfPayment = (s: ReputationSale, site: SiteInfo) => ({
  fromAddress: checksummed(s.buyer_address),
  toAddress: checksummed(s.pay_to),
  chainId: Number(site.network.split(':')[1]),
  txHash: s.tx_hash,
  receipt: s.receipt,
  receiptUrl: `${site.baseUrl}/api/payments/${s.payment_id}/receipt`,
});

/**
 * What would be posted to the ERC-8004 Reputation Registry for one settled sale, if the buyer
 * posted feedback: a `NewFeedback` marked simulated, with its proof of payment.
 */
export const reputationEvent = (s: ReputationSale, tokenId: string | null, site: SiteInfo) => ({
  id: s.id,
  kind: 'NewFeedback',
  simulated: true,
  agentId: tokenId,
  clientAddress: checksummed(s.buyer_address),
  clientIsAgent: s.buyer_agent_id !== null,
  value: 100,
  valueDecimals: 0,
  tag1: 'x402-purchase',
  tag2: s.post_id,
  endpoint: `${site.baseUrl}/api/posts/${s.post_id}?view=full`,
  amountAtomic: s.amount_atomic,
  asset: site.usdcAddress,
  network: site.network,
  txHash: s.tx_hash,
  occurredAt: s.created_at.toISOString(),
  proofOfPayment: proofOfPayment(s, site),
});

/**
 * A trust event as the mirror states it: what happened, to which skill, by which wallet, with its
 * details (for on-chain feedback, the marketplace's verification against its ledger).
 */
export const trustEvent = (e: TrustEvent, tokenId: string | null) => ({
  id: e.id,
  kind: e.kind,
  simulated: false as const,
  agentId: tokenId,
  clientAddress: checksummed(e.client_address),
  postId: e.post_id,
  occurredAt: e.occurred_at.toISOString(),
  details: e.details,
});

/**
 * The reputation mirror, newest first: what happened (reviews, responses, revocations, refund
 * requests and outcomes, on-chain feedback with its verification) and, for each sale, the
 * feedback it would carry on chain (simulated, with its proof of payment).
 */
export const renderReputation = (v: ReputationView) =>
  [
    ...v.sales.map((s) => ({ at: s.created_at.getTime(), event: reputationEvent(s, v.tokenId, v.site) })),
    ...(v.events ?? []).map((e) => ({ at: e.occurred_at.getTime(), event: trustEvent(e, v.tokenId) })),
  ]
    .sort((a, b) => b.at - a.at)
    .map((x) => x.event);

const valid = renderReputation({
  sales: [
    {
      id: '9a1c2b3d-4e5f-4a6b-8c7d-0e1f2a3b4c5d',
      post_id: '5f0c7a9e-1b2c-4d3e-8f90-a1b2c3d4e5f6',
      buyer_address: '0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc',
      buyer_agent_id: null,
      amount_atomic: '1500000',
      tx_hash: `0x${'5e'.repeat(32)}`,
      created_at: new Date(EXAMPLE_TIME),
      payment_id: '2b7c4d1e-8f3a-4c5b-9d6e-7f8a9b0c1d2e',
      pay_to: '0x70997970c51812dc3a010c7d01b50e0d17dc79c8',
      receipt: {
        format: 'eip712',
        payload: {
          version: 1,
          network: 'eip155:84532',
          resourceUrl: 'https://market.example/api/posts/5f0c7a9e-1b2c-4d3e-8f90-a1b2c3d4e5f6?view=full',
          payer: '0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc',
          issuedAt: Date.parse(EXAMPLE_TIME) / 1000,
          transaction: `0x${'5e'.repeat(32)}`,
        },
        signature: `0x${'ab'.repeat(65)}`,
      },
    },
  ],
  events: [
    {
      kind: 'Review',
      id: '0b6f2c1e-5a4d-4e3b-9c8a-7d6e5f4a3b2c',
      occurred_at: new Date(Date.parse(EXAMPLE_TIME) + 3_600_000),
      client_address: '0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc',
      post_id: '5f0c7a9e-1b2c-4d3e-8f90-a1b2c3d4e5f6',
      details: {
        rating: 5,
        revision: 1,
        status: 'live',
        paymentId: '2b7c4d1e-8f3a-4c5b-9d6e-7f8a9b0c1d2e',
        feedbackHash: `0x${'c4'.repeat(32)}`,
      },
    },
  ],
  tokenId: '7',
  site: EXAMPLE_SITE,
});
const event = valid.find((e) => e.simulated) as ReturnType<typeof reputationEvent>;
const trust = valid.find((e) => !e.simulated);

/** How many events the mirror holds: the newest sales and, beside them, the newest trust events. */
export const REPUTATION_ITEMS_MAX = 2 * REPUTATION_LIMIT;

/** A sale's simulated feedback, as the seed's mirror states it. */
const saleEventSchema = object({
  id: string,
  kind: { const: 'NewFeedback' },
  simulated: { const: true },
  agentId: nullable(string),
  clientAddress: string,
  clientIsAgent: boolean,
  value: integer,
  valueDecimals: integer,
  tag1: string,
  tag2: string,
  endpoint: string,
  amountAtomic: string,
  asset: string,
  network: string,
  txHash: nullable(string),
  occurredAt: string,
  proofOfPayment: object({
    fromAddress: string,
    toAddress: string,
    chainId: integer,
    txHash: string,
    receipt: object({
      format: { const: 'eip712' },
      payload: object({
        version: integer,
        network: string,
        resourceUrl: string,
        payer: string,
        issuedAt: integer,
        transaction: string,
      }),
      signature: string,
    }),
    receiptUrl: string,
  }),
});

/** /api/agents/{handle}/reputation.json */
export const agentReputationDocument = defineDocument({
  id: 'AgentReputation',
  path: '/api/agents/{handle}/reputation.json',
  contentType: JSON_TYPE,
  cache: AGENT_DOCUMENT_CACHE,
  schema: {
    type: 'array',
    maxItems: REPUTATION_ITEMS_MAX,
    items: {
      anyOf: [
        object({
          id: string,
          kind: {
            enum: [
              'Review',
              'ReviewRevoked',
              'SellerResponse',
              'RefundRequested',
              'RefundDeclined',
              'Refunded',
              'NewFeedback',
            ],
          },
          simulated: { const: false },
          agentId: nullable(string),
          clientAddress: string,
          postId: nullable(string),
          occurredAt: string,
          details: { type: 'object' },
        }),
        saleEventSchema,
      ],
    },
  },
  examples: {
    valid: [valid, []],
    invalid: [
      [{ ...event, simulated: false }],
      { events: valid },
      [{ ...event, proofOfPayment: { ...event?.proofOfPayment, receipt: undefined } }],
      [{ ...trust, kind: 'Rumour' }],
    ],
  },
  render: renderReputation,
});
