import {
  createReceiptDomain,
  prepareReceiptForEIP712,
  RECEIPT_TYPES,
  type EIP712SignedReceipt,
} from '@x402/extensions/offer-receipt';
import { getAddress, verifyTypedData, type Hex } from 'viem';
import { CliError } from './cli-error.js';
import type { MarketApi } from './market-api.js';

export interface CheckedReceipt {
  valid: boolean;
  signer: string;
  payer: string;
  resourceUrl: string;
  network: string;
  transaction: string;
  issuedAt: string;
  purchase: { postId: string; version: number; digest: string } | null;
}

/**
 * Fetches a payment's signed receipt and checks it: its EIP-712 signature must recover to the
 * receipt key the marketplace publishes in its site AgentCard.
 */
export async function checkReceipt(api: MarketApi, paymentId: string): Promise<CheckedReceipt> {
  const body = await api.json<
    EIP712SignedReceipt & { receipt?: EIP712SignedReceipt; purchase?: CheckedReceipt['purchase'] }
  >(`/api/payments/${encodeURIComponent(paymentId)}/receipt`);
  const receipt = body.receipt ?? body;
  const card = await api.json<{ capabilities?: { extensions?: { uri?: string; params?: { address?: string } }[] } }>(
    '/.well-known/agent-card.json',
  );
  const key = card.capabilities?.extensions?.find((e) => e.uri?.includes('offer-and-receipt'))?.params?.address;
  if (!key) throw new CliError('receipt_key_missing', `the site AgentCard at ${api.base} publishes no receipt signer`);
  const signer = getAddress(key);
  const valid = await verifyTypedData({
    address: signer,
    domain: createReceiptDomain(),
    types: RECEIPT_TYPES,
    primaryType: 'Receipt',
    message: prepareReceiptForEIP712(receipt.payload),
    signature: receipt.signature as Hex,
  }).catch(() => false);
  const p = receipt.payload;
  return {
    valid,
    signer,
    payer: p.payer,
    resourceUrl: p.resourceUrl,
    network: p.network,
    transaction: p.transaction,
    issuedAt: new Date(p.issuedAt * 1000).toISOString(),
    purchase: body.purchase
      ? { postId: body.purchase.postId, version: body.purchase.version, digest: body.purchase.digest }
      : null,
  };
}
