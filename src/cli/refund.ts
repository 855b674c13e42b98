import { randomBytes } from 'node:crypto';
import { refundRequestTypedData, skillRefundTypedData } from '@skill-market/skill-protocol/refund-typed-data';
import { authorizationTypes } from '@x402/evm';
import {
  createPublicClient,
  getAddress,
  http,
  isAddressEqual,
  parseAbi,
  verifyTypedData,
  type Address,
  type Hex,
} from 'viem';
import { type Ctx, usdc } from './agent-actions.js';
import { CliError } from './cli-error.js';
import type { Payment, RefundState } from './market-api.js';
import { chainIdOf } from './review.js';
import { shown } from './terminal-text.js';

/**
 * `skill-market refund` (docs/refunds.md): the buyer asks, with the paying wallet's EIP-712
 * RefundRequest; the seller declines, or refunds by signing an EIP-3009 authorization from its
 * payout wallet to the buyer for exactly the price, which the market relays; anyone reads the
 * outcome and checks the market's signed receipt.
 */

/** A payment as its payer and payee see it: who paid whom, how much of which asset. */
type PartyPayment = Payment & { asset: string; payTo: string; payer?: string };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function paymentIdOf(text: string): string {
  if (!UUID.test(text))
    throw new CliError('invalid_argument', shown`"${text}" is not a payment id (a UUID, as buy and payments print)`);
  return text.toLowerCase();
}

async function tokenOf(c: Ctx, handle: string) {
  const agent = await c.home.load(handle);
  if (!agent.token)
    throw new CliError('not_logged_in', `@${handle} has no token in ${c.home.dir}: run "skill-market login ${handle}"`);
  return { token: agent.token, wallet: await c.home.wallet(agent) };
}

/** The buyer asks for a refund, signing the request with the wallet that paid (no token needed). */
export async function requestRefund(c: Ctx, handle: string, payment: string, opts: { reason: string; text?: string }) {
  const paymentId = paymentIdOf(payment);
  const wallet = await c.home.wallet(await c.home.load(handle));
  const { network } = await c.api.payment(paymentId);
  const issuedAt = new Date();
  const text = opts.text ?? '';
  const signature = await wallet.signTypedData({
    ...refundRequestTypedData(chainIdOf(network)),
    message: { paymentId, reason: opts.reason, text, issuedAt: BigInt(Math.floor(issuedAt.getTime() / 1000)) },
  });
  const answer = await c.api.json<RefundState>(`/api/purchases/${paymentId}/refund-request`, {
    json: { reason: opts.reason, text, issuedAt: issuedAt.toISOString(), signature },
  });
  c.io.out(shown`refund requested for payment ${paymentId}, signed by ${wallet.address} (EIP-712 RefundRequest)`);
  printRequest(c, answer);
}

/** The seller declines an open request, saying why. */
export async function declineRefund(c: Ctx, handle: string, payment: string, opts: { reason: string; text?: string }) {
  const paymentId = paymentIdOf(payment);
  const { token } = await tokenOf(c, handle);
  const answer = await c.api.json<RefundState>(`/api/purchases/${paymentId}/refund-request/decline`, {
    token,
    json: { reason: opts.reason, text: opts.text ?? '' },
  });
  c.io.out(shown`refund declined for payment ${paymentId}`);
  printRequest(c, answer);
}

/**
 * The seller refunds a purchase: an EIP-3009 TransferWithAuthorization from its wallet (the
 * purchase's payTo) to the buyer of exactly the amount paid, valid for ten minutes, which the
 * market checks and relays. The market answers once the refund settled, or that it is relaying.
 */
export async function acceptRefund(c: Ctx, handle: string, payment: string, opts: { rpcUrl?: string }) {
  const paymentId = paymentIdOf(payment);
  const { token, wallet } = await tokenOf(c, handle);
  const paid = (await c.api.payment(paymentId, token)) as PartyPayment;
  if (paid.purpose !== 'purchase' || paid.status !== 'settled')
    throw new CliError(
      'not_refundable',
      shown`payment ${paymentId} is a ${paid.status} ${paid.purpose}, not a settled purchase`,
    );
  if (!paid.payer || !isAddressEqual(paid.payTo as Address, wallet.address))
    throw new CliError(
      'not_payee',
      shown`payment ${paymentId} paid ${paid.payTo}, not @${handle}'s wallet ${wallet.address}: only the wallet paid refunds`,
    );
  const chainId = chainIdOf(paid.network);
  const domain = await usdcDomain(c, paid, paymentId, opts.rpcUrl);
  const now = BigInt(Math.floor(Date.now() / 1000));
  const authorization = {
    from: wallet.address,
    to: getAddress(paid.payer),
    value: BigInt(paid.amount),
    validAfter: now - 60n,
    validBefore: now + 600n,
    nonce: `0x${randomBytes(32).toString('hex')}` as Hex,
  };
  const signature = await wallet.signTypedData({
    domain: { ...domain, chainId, verifyingContract: getAddress(paid.asset) },
    types: authorizationTypes,
    primaryType: 'TransferWithAuthorization',
    message: authorization,
  });
  const res = await c.api.send(`/api/purchases/${paymentId}/refund`, {
    token,
    json: {
      authorization: {
        ...authorization,
        value: authorization.value.toString(),
        validAfter: authorization.validAfter.toString(),
        validBefore: authorization.validBefore.toString(),
      },
      signature,
    },
  });
  const state = (await res.json()) as RefundState;
  c.io.out(
    res.status === 200
      ? shown`refunded ${usdc(paid.amount)} to ${authorization.to} for payment ${paymentId}`
      : shown`refund of ${usdc(paid.amount)} to ${authorization.to} sent, not settled yet: run "skill-market refund show ${paymentId}" (do not sign another)`,
  );
  await printRefund(c, state);
}

/** A purchase's refund request and refund, with the receipt checked against the key the site AgentCard publishes. */
export async function showRefund(c: Ctx, payment: string) {
  const paymentId = paymentIdOf(payment);
  const state = await c.api.refundOf(paymentId);
  if (!state)
    throw new CliError(
      'refund_not_found',
      `payment ${paymentId} has neither a refund request nor a refund at ${c.api.base}`,
    );
  c.io.out(shown`payment ${state.paymentId} of skill ${state.postId}`);
  if (state.request) printRequest(c, state);
  else c.io.out('  request       (none)');
  await printRefund(c, state);
}

function printRequest(c: Ctx, { request: r }: RefundState) {
  if (!r) return;
  c.io.out(shown`  request       ${r.status}: ${r.reason}${r.text ? ` "${r.text}"` : ''} (${r.requestedAt})`);
  if (r.declineReason)
    c.io.out(shown`  declined      ${r.declineReason}${r.declineText ? ` "${r.declineText}"` : ''} (${r.respondedAt})`);
}

async function printRefund(c: Ctx, { refund: f }: RefundState) {
  if (!f) return c.io.out('  refund        (none)');
  c.io.out(shown`  refund        ${f.status}: ${usdc(f.amount)} from ${f.from} to ${f.buyer}`);
  c.io.out(shown`  transaction   ${f.txHash ?? '(not yet)'}`);
  if (f.failureReason) c.io.out(shown`  failure       ${f.failureReason}`);
  if (!f.receipt) return;
  const valid = await receiptVerifies(c, f.receipt);
  c.io.out(shown`  receipt       ${valid ? 'valid' : 'INVALID'}, signed by ${f.receipt.signer} (EIP-712 SkillRefund)`);
  if (!valid)
    throw new CliError(
      'receipt_invalid',
      'the refund receipt is not signed by the receipt key the site AgentCard publishes',
    );
}

/** Whether a refund receipt is the SkillRefund it states, signed by the receipt key of the site AgentCard. */
async function receiptVerifies(c: Ctx, receipt: NonNullable<NonNullable<RefundState['refund']>['receipt']>) {
  type Card = { capabilities?: { extensions?: { uri?: string; params?: { address?: string } }[] } };
  const card = await c.api.json<Card>('/.well-known/agent-card.json');
  const key = card.capabilities?.extensions?.find((e) => e.uri?.includes('offer-and-receipt'))?.params?.address;
  const m = receipt.typedData.message;
  if (!key || !m.buyer || !m.seller || !m.amount || !m.refundedAt) return false;
  return verifyTypedData({
    address: getAddress(key),
    ...skillRefundTypedData(),
    message: {
      paymentId: m.paymentId ?? '',
      purchaseTransaction: m.purchaseTransaction ?? '',
      refundTransaction: m.refundTransaction ?? '',
      postId: m.postId ?? '',
      buyer: getAddress(m.buyer),
      seller: getAddress(m.seller),
      amount: BigInt(m.amount),
      refundedAt: BigInt(m.refundedAt),
    },
    signature: receipt.signature as Hex,
  }).catch(() => false);
}

const TOKEN_DOMAIN_ABI = parseAbi([
  'function name() view returns (string)',
  'function version() view returns (string)',
]);

/**
 * The EIP-712 name and version of the USDC the purchase paid in: read from the token with
 * --rpc-url (or SKILL_MARKET_RPC_URL), else from the skill's x402 offer (the `extra` its buyers
 * sign against). A skill taken down makes no offer: then the chain is the only source.
 */
async function usdcDomain(c: Ctx, paid: PartyPayment, paymentId: string, rpcOption: string | undefined) {
  const asset = getAddress(paid.asset);
  const rpcUrl = rpcOption ?? c.io.env.SKILL_MARKET_RPC_URL;
  if (rpcUrl) {
    const reader = createPublicClient({ transport: http(rpcUrl) });
    const read = (functionName: 'name' | 'version') =>
      reader.readContract({ address: asset, abi: TOKEN_DOMAIN_ABI, functionName });
    try {
      const [name, version] = await Promise.all([read('name'), read('version')]);
      return { name, version };
    } catch (err) {
      throw new CliError(
        'chain_failed',
        `reading the EIP-712 domain of ${asset} at ${rpcUrl}: ${(err as { shortMessage?: string }).shortMessage ?? (err as Error).message}`,
      );
    }
  }
  const bought = await c.api.json<{ purchase?: { postId: string } | null }>(`/api/payments/${paymentId}/receipt`);
  const offer = bought.purchase ? await c.api.paymentOffer(bought.purchase.postId) : undefined;
  const extra = offer?.find((a) => a.network === paid.network && isAddressEqual(a.asset as Address, asset))?.extra;
  if (typeof extra?.name !== 'string' || typeof extra.version !== 'string')
    throw new CliError(
      'usdc_domain_unknown',
      `the skill of payment ${paymentId} offers no x402 payment in ${asset} to read its EIP-712 domain from: pass --rpc-url to read it from the token`,
    );
  return { name: extra.name, version: extra.version };
}
