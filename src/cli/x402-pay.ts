import { decodePaymentResponseHeader, wrapFetchWithPayment, x402Client } from '@x402/fetch';
import { registerExactEvmScheme } from '@x402/evm/exact/client';
import type { Network } from '@x402/core/types';
import { decodeXPaymentResponse, wrapFetchWithPayment as wrapFetchV1 } from 'x402-fetch';
import { createWalletClient, defineChain, http, publicActions } from 'viem';
import type { PrivateKeyAccount } from 'viem/accounts';

/** Which x402 protocol pays: v2 (`@x402/fetch`, the default) or v1 (`x402-fetch`, `--v1`). */
export type X402Version = 1 | 2;

/** What a paying request may spend: one asset on one network, at most `maxAtomic`. */
export interface Spend {
  network: string;
  asset: string;
  maxAtomic: bigint;
}

/** fetch that answers a 402 by paying with `account` within `spend`, over x402 v2 or v1. */
export function payingFetch(
  fetchImpl: typeof fetch,
  account: PrivateKeyAccount,
  spend: Spend,
  x402: X402Version,
): typeof fetch {
  if (x402 === 1) {
    // x402-fetch signs the EIP-3009 authorization locally; it wants a wallet client on the payment's
    // chain but sends nothing over its transport.
    const chainId = Number(spend.network.split(':')[1]);
    const chain = defineChain({
      id: chainId,
      name: 'market',
      nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
      rpcUrls: { default: { http: ['http://127.0.0.1:8545'] } },
    });
    const wallet = createWalletClient({ account, chain, transport: http() }).extend(publicActions);
    return wrapFetchV1(fetchImpl, wallet as never, spend.maxAtomic) as unknown as typeof fetch;
  }
  const client = new x402Client();
  registerExactEvmScheme(client, { signer: account, networks: [spend.network as Network] });
  client.setSpendControls({
    allowedAssets: [
      { network: spend.network as Network, asset: spend.asset, maxAmountPerPayment: spend.maxAtomic.toString() },
    ],
  });
  return wrapFetchWithPayment(fetchImpl, client) as typeof fetch;
}

/** The settlement transaction of a paid answer (PAYMENT-RESPONSE for v2, X-PAYMENT-RESPONSE for v1). */
export function settlement(res: Response): { transaction?: string } {
  const v2 = res.headers.get('payment-response');
  const v1 = res.headers.get('x-payment-response');
  const decoded = v2 ? decodePaymentResponseHeader(v2) : v1 ? decodeXPaymentResponse(v1) : undefined;
  return decoded?.transaction ? { transaction: decoded.transaction } : {};
}
