import { z } from 'zod';
import { getAddress } from 'viem';
import type { ApiDeps } from '../deps.js';
import { defineRoute } from '../http/route.js';
import { authenticate } from '../middleware/auth.js';
import { findPayment, listPayments, TERMINAL, type ListedPayment } from '../../data/payments.repository.js';
import { NotFoundError, UnauthorizedError } from '../../platform/errors.js';
import { cursorOf, positionOf } from '../http/payment-cursor.js';
import { readReceipt } from '../../domain/payments/ledger/receipts.use-cases.js';
import { sendCacheable } from '../http/cache.js';
import { jsonBytes } from '../../domain/publishing/publish-document.js';
import type { Payment } from '../../data/schema.js';
import { presentsAdminToken } from '../../platform/admin-token.js';

const PaymentSchema = z.object({
  id: z.string(),
  status: z.enum(['pending', 'verified', 'settling', 'settled', 'failed', 'expired']),
  purpose: z.enum(['registration', 'purchase']),
  amount: z.string().describe('atomic units of the asset (USDC: 6 decimals)'),
  asset: z.string(),
  network: z.string().describe('CAIP-2'),
  payTo: z.string(),
  resource: z.string(),
  txHash: z.string().nullable(),
  failureReason: z.string().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
  settledAt: z.string().nullable(),
  payer: z.string().optional().describe('only for the payer and the payee'),
  protocolVersion: z.number().optional().describe('only for the payer and the payee'),
  validBefore: z.string().optional().describe('only for the payer and the payee'),
  settleAttempts: z.number().optional().describe('only for the payer and the payee'),
  facilitator: z.string().nullable().optional().describe('only for the payer and the payee'),
});

/**
 * Everyone may poll a payment's progress (what was paid, to whom, for what, and its on-chain
 * transaction, all of which the chain shows anyway). The payer's address and the payment's
 * mechanics are shown only to the payer and the payee, when signed in.
 */
function paymentView(p: Payment, viewerWallet: string | undefined) {
  const base = {
    id: p.id,
    status: p.status,
    purpose: p.purpose,
    amount: p.amount_atomic,
    asset: getAddress(p.asset),
    network: p.network,
    payTo: getAddress(p.pay_to),
    resource: p.resource,
    txHash: p.tx_hash,
    failureReason: p.failure_reason,
    createdAt: p.created_at.toISOString(),
    updatedAt: p.updated_at.toISOString(),
    settledAt: p.settled_at?.toISOString() ?? null,
  };
  const party = viewerWallet && [p.payer, p.pay_to, p.registration_wallet].includes(viewerWallet.toLowerCase());
  if (!party) return base;
  return {
    ...base,
    payer: getAddress(p.payer),
    protocolVersion: p.protocol_version,
    validBefore: new Date(p.valid_before).toISOString(),
    settleAttempts: p.settle_attempts,
    facilitator: p.facilitator,
  };
}

const PaymentIdParams = z.object({
  paymentId: z.guid(
    'must be a payment id (UUID, the X-Payment-Id header of the paid answer); to find payments by their settlement transaction, GET /api/payments?txHash=0x…',
  ),
});

const TX_HASH = /^0x[0-9a-fA-F]{64}$/;
const ListQuery = z
  .object({
    txHash: z
      .string()
      .regex(TX_HASH, 'must be a transaction hash: 0x and 64 hex digits')
      .optional()
      .describe('the payments this settlement transaction carried (anyone may ask)'),
    limit: z.coerce.number().int().min(1).max(100).default(20),
    cursor: z.string().max(200).optional().describe('nextCursor of the previous page'),
  })
  .strict();

const ReceiptSchema = z
  .object({
    paymentId: z.string(),
    format: z.literal('eip712'),
    payload: z.object({
      version: z.number(),
      network: z.string().describe('CAIP-2'),
      resourceUrl: z.string(),
      payer: z.string(),
      issuedAt: z.number().describe('settlement time, Unix seconds'),
      transaction: z.string(),
    }),
    signature: z.string().describe('EIP-712 signature of the payload by signer.address'),
    signer: z.object({
      address: z.string().describe('the receipt key, also in the site AgentCard and /.well-known/x402'),
      kid: z.string(),
      format: z.literal('eip712'),
    }),
    eip712: z.object({
      domain: z.record(z.string(), z.unknown()),
      types: z.record(z.string(), z.array(z.object({ name: z.string(), type: z.string() }))),
      primaryType: z.literal('Receipt'),
    }),
    purchase: z
      .object({
        transaction: z.string(),
        postId: z.string(),
        version: z.number().describe('the version bought'),
        digest: z.string().describe('sha256:<hex>, the skill digest of the version bought'),
        signature: z.string().describe('EIP-712 SkillPurchase signature by signer.address'),
        eip712: z.object({
          domain: z.record(z.string(), z.unknown()),
          types: z.record(z.string(), z.array(z.object({ name: z.string(), type: z.string() }))),
          primaryType: z.literal('SkillPurchase'),
        }),
      })
      .nullable()
      .optional()
      .describe('what a purchase bought: the skill version and its digest, signed by the receipt key'),
  })
  .describe('x402 offer-receipt receipt (EIP-712); verify with viem verifyTypedData');

const BreakerSchema = z.object({
  name: z.string(),
  kind: z.enum(['builtin', 'remote']),
  url: z.string().optional(),
  state: z.enum(['closed', 'open', 'half-open']),
  consecutiveFailures: z.number(),
  lastError: z.string().nullable(),
  lastErrorAt: z.string().nullable(),
  lastSuccessAt: z.string().nullable(),
  openedAt: z.string().nullable(),
});

const ProbeSchema = z.object({
  name: z.string(),
  kind: z.enum(['builtin', 'remote']),
  url: z.string().optional(),
  ok: z.boolean(),
  latencyMs: z.number(),
  kinds: z.array(z.object({ x402Version: z.number(), scheme: z.string(), network: z.string() })),
  error: z.string().nullable(),
});

/**
 * What anyone is told of a facilitator's failure: a facilitator's URL and its errors may name
 * hosts and keys, so they go only to the operator (the admin token).
 */
const HIDDEN = 'failed (details with the admin token)';

export const paymentRoutes = (deps: ApiDeps) => [
  defineRoute({
    method: 'get',
    path: '/api/payments',
    operationId: 'listPayments',
    summary: "The signed-in agent's payments (made or received), newest first; or, with txHash, a settlement's",
    description:
      "With a bearer token: the payments the agent's wallet made (registrations, purchases) or received (sales), " +
      "newest first, `limit` a page (default 20), `cursor` = the previous page's `nextCursor`. With `txHash`: the " +
      'payments that settlement transaction carried, for anyone. Each item is the payment record of GET /api/payments/{paymentId}.',
    tags: ['payments'],
    query: ListQuery,
    responses: {
      200: {
        description: 'A page of payments',
        schema: z.object({
          items: z.array(PaymentSchema),
          nextCursor: z.string().nullable().describe('pass as cursor for the next page; null at the end'),
        }),
      },
    },
    handler: async ({ query, req, res }) => {
      const viewer = authenticate(req, deps.jwt, false);
      const by = query.txHash ? { txHash: query.txHash } : viewer ? { wallet: viewer.wallet } : undefined;
      if (!by)
        throw new UnauthorizedError(
          'Listing payments needs a bearer token (your own payments) or txHash (a settlement transaction)',
          'token_missing',
        );
      const rows = await listPayments(
        deps.db,
        by,
        query.limit + 1,
        query.cursor ? positionOf(query.cursor) : undefined,
      );
      const page = rows.slice(0, query.limit);
      res.set('Cache-Control', 'no-store');
      res.json({
        items: page.map((p) => paymentView(p, viewer?.wallet)),
        nextCursor: rows.length > query.limit ? cursorOf(page[query.limit - 1] as ListedPayment) : null,
      });
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/payments/:paymentId',
    operationId: 'getPayment',
    summary: 'Poll a payment until it is settled or failed',
    tags: ['payments'],
    params: PaymentIdParams,
    responses: {
      200: { description: 'The payment record (more fields for its payer and payee)', schema: PaymentSchema },
    },
    handler: async ({ params, req, res }) => {
      const viewer = authenticate(req, deps.jwt, false);
      const payment = await findPayment(deps.db, params.paymentId);
      if (!payment) throw new NotFoundError(`Payment ${params.paymentId}`, 'payment_not_found');
      const final = TERMINAL.includes(payment.status);
      res.set('Cache-Control', final && !viewer ? 'public, max-age=60' : 'no-store');
      res.json(paymentView(payment, viewer?.wallet));
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/payments/:paymentId/receipt',
    operationId: 'getPaymentReceipt',
    summary: 'The signed receipt of a settled payment (x402 offer-receipt, EIP-712)',
    description:
      'The receipt the settlement response carried, served again: the same bytes for as long as the receipt key is the same. ' +
      'Verify it with viem verifyTypedData({address: signer.address, ...eip712, message: payload, signature}) ' +
      '(uint256 members as bigint), against the key the site AgentCard publishes.',
    tags: ['payments'],
    params: PaymentIdParams,
    responses: {
      200: { description: 'The signed receipt', schema: ReceiptSchema },
      404: { description: 'No such payment (payment_not_found)' },
      409: { description: 'The payment is not settled yet (payment_not_settled); poll the payment' },
    },
    handler: async ({ params, req, res }) => {
      sendCacheable(req, res, {
        body: jsonBytes(await readReceipt(deps, params.paymentId)),
        contentType: 'application/json',
        cacheControl: 'public, max-age=3600',
      });
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/payment/health',
    operationId: 'probeFacilitators',
    summary: 'Live probe of every payment facilitator (GET /supported with a 3 s timeout)',
    description:
      'Each facilitator by name and status; its URL and why it failed only with the admin token (Authorization: Bearer).',
    tags: ['payments'],
    responses: {
      200: {
        description: 'At least one facilitator answered',
        schema: z.object({ status: z.enum(['ok', 'degraded', 'down']), providers: z.array(ProbeSchema) }),
      },
      503: {
        description: 'No facilitator answered',
        schema: z.object({ status: z.literal('down'), providers: z.array(ProbeSchema) }),
      },
    },
    handler: async ({ req, res }) => {
      const operator = presentsAdminToken(req.get('authorization'), deps.adminToken);
      const providers = (await deps.facilitators.probe()).map((p) =>
        operator ? p : { ...p, url: undefined, error: p.error === null ? null : HIDDEN },
      );
      const up = providers.filter((p) => p.ok).length;
      const status = up === providers.length && up > 0 ? 'ok' : up > 0 ? 'degraded' : 'down';
      res
        .status(up > 0 ? 200 : 503)
        .set('Cache-Control', 'no-store')
        .json({ status, providers });
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/health/facilitators',
    operationId: 'facilitatorBreakers',
    summary: 'Cached circuit-breaker state of each facilitator, as this API process sees it',
    description:
      'Each facilitator by name and breaker state; its URL and last error only with the admin token (Authorization: Bearer).',
    tags: ['payments'],
    responses: {
      200: {
        description: 'Breaker states',
        schema: z.object({ checkedAt: z.string(), facilitators: z.array(BreakerSchema) }),
      },
    },
    handler: ({ req, res }) => {
      const operator = presentsAdminToken(req.get('authorization'), deps.adminToken);
      const facilitators = deps.facilitators
        .snapshot()
        .map((f) => (operator ? f : { ...f, url: undefined, lastError: f.lastError === null ? null : HIDDEN }));
      res.set('Cache-Control', 'no-store').json({ checkedAt: new Date().toISOString(), facilitators });
    },
  }),
];
