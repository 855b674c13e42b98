/**
 * The bundled agent's x402 ecosystem commands, each built only on the official packages:
 * Bazaar discovery (`@x402/extensions/bazaar` over `@x402/core`'s facilitator client), Sign-In-With-X
 * re-access and offer-receipt verification (`@x402/extensions`, viem).
 */
import { HTTPFacilitatorClient } from '@x402/core/http';
import { withBazaar } from '@x402/extensions/bazaar';
import {
  createReceiptDomain,
  prepareReceiptForEIP712,
  RECEIPT_TYPES,
  type EIP712SignedReceipt,
} from '@x402/extensions/offer-receipt';
import { wrapFetchWithSIWx } from '@x402/extensions/sign-in-with-x';
import { getAddress, verifyTypedData, type Hex } from 'viem';
import type { PrivateKeyAccount } from 'viem/accounts';

/** Lists the marketplace's paid resources, or searches them, as any Bazaar client would. */
export async function discover(base: string, query: string | undefined): Promise<void> {
  const bazaar = withBazaar(new HTTPFacilitatorClient({ url: base })).extensions.bazaar;
  const found = query
    ? (await bazaar.search({ query, limit: 20 })).resources
    : (await bazaar.listResources({ type: 'http', limit: 20 })).items;
  if (found.length === 0) console.log(query ? `nothing matches "${query}"` : 'no paid resources listed');
  for (const r of found) {
    const accept = r.accepts[0];
    const price = accept ? `${(Number(accept.amount) / 1e6).toFixed(6)} USDC to ${accept.payTo}` : 'free';
    console.log(`${r.serviceName ?? r.description ?? ''}\n  ${r.resource}\n  ${price}`);
  }
}

/**
 * Reads a bought skill's full view again, free: the 402 offers Sign-In-With-X, the official
 * client signs its challenge with the buying wallet, and the marketplace checks the purchase.
 */
export async function reread(base: string, account: PrivateKeyAccount, postId: string): Promise<void> {
  const res = await wrapFetchWithSIWx(fetch, account)(`${base}/api/posts/${postId}?view=full`);
  const body = await res.json();
  if (res.status !== 200) throw new Error(`reread: ${res.status} ${body.code ?? ''} ${body.detail ?? ''}`);
  console.log(`read "${body.title}" (${body.versionLabel}) again with Sign-In-With-X, nothing paid:`);
  for (const f of body.files) console.log(`--- ${f.path}\n${f.content}`);
}

/**
 * Fetches a payment's signed receipt and checks it: the EIP-712 signature must recover to the
 * receipt key the marketplace publishes in its AgentCard.
 */
export async function checkReceipt(base: string, paymentId: string): Promise<void> {
  const res = await fetch(`${base}/api/payments/${paymentId}/receipt`);
  const body = await res.json();
  if (res.status !== 200) throw new Error(`receipt: ${res.status} ${body.code ?? ''} ${body.detail ?? ''}`);
  const receipt: EIP712SignedReceipt = body.receipt ?? body;
  const signer = getAddress(await publishedReceiptKey(base));
  const valid = await verifyTypedData({
    address: signer,
    domain: createReceiptDomain(),
    types: RECEIPT_TYPES,
    primaryType: 'Receipt',
    message: prepareReceiptForEIP712(receipt.payload),
    signature: receipt.signature as Hex,
  });
  const p = receipt.payload;
  console.log(
    `${valid ? 'valid' : 'INVALID'} receipt signed by ${signer}\n  ${p.payer} paid for ${p.resourceUrl}\n  ${p.network} tx ${p.transaction} at ${new Date(p.issuedAt * 1000).toISOString()}`,
  );
  if (!valid) process.exitCode = 1;
}

/** The receipt signer the site AgentCard names (the x402 offer-receipt extension's params). */
async function publishedReceiptKey(base: string): Promise<string> {
  const card = await (await fetch(`${base}/.well-known/agent-card.json`)).json();
  const extensions: { uri?: string; params?: { address?: string } }[] = card?.capabilities?.extensions ?? [];
  const address = extensions.find((e) => e.uri?.includes('offer-and-receipt'))?.params?.address;
  if (!address) throw new Error('the site AgentCard publishes no receipt signer');
  return address;
}
