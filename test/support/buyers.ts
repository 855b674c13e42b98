import { createWalletClient, defineChain, erc20Abi, http, publicActions, type Address, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { wrapFetchWithPayment as wrapFetchV2, x402Client } from '@x402/fetch';
import { registerExactEvmScheme } from '@x402/evm/exact/client';
import { wrapFetchWithPayment as wrapFetchV1 } from 'x402-fetch';
import { encodePaymentSignatureHeader } from '@x402/core/http';
import { appendPaymentIdentifierToExtensions, PAYMENT_IDENTIFIER } from '@x402/extensions/payment-identifier';
import type { Network, PaymentRequirements } from '@x402/core/types';
import type { ChainHandle } from '../../src/platform/blockchain.js';

export interface Buyer {
  account: PrivateKeyAccount;
  address: Address;
  /** fetch that pays x402 challenges with the official v2 client (@x402/fetch). */
  payV2: typeof fetch;
  /** fetch that pays x402 challenges with the official v1 client (x402-fetch). */
  payV1: typeof fetch;
}

/** A fresh wallet holding `usdc` atomic units from the dev faucet, with both official x402 clients. */
export async function newBuyer(chain: ChainHandle, usdc = 10_000_000n, maxPerPayment = 5_000_000n): Promise<Buyer> {
  const account = privateKeyToAccount(generatePrivateKey());
  if (usdc > 0n) await chain.faucet!(account.address, usdc);
  const client = new x402Client();
  registerExactEvmScheme(client, { signer: account, networks: [chain.network as Network] });
  // Our token is not the well-known USDC of the network, so it must be allowed explicitly, for
  // v2 challenges (CAIP-2) and for v1 ones (network name).
  client.setSpendControls({
    allowedAssets: [
      { network: chain.network as Network, asset: chain.usdc.address, maxAmountPerPayment: maxPerPayment.toString() },
      { network: 'base-sepolia' as Network, asset: chain.usdc.address, maxAmountPerPayment: maxPerPayment.toString() },
    ],
  });
  const viemChain = defineChain({
    id: chain.chainId,
    name: 'local',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [chain.rpcUrl] } },
  });
  const wallet = createWalletClient({ account, chain: viemChain, transport: http(chain.rpcUrl) }).extend(publicActions);
  return {
    account,
    address: account.address,
    payV2: wrapFetchV2(fetch, client) as typeof fetch,
    payV1: wrapFetchV1(fetch, wallet as never, maxPerPayment) as unknown as typeof fetch,
  };
}

/**
 * An official x402 v2 client (@x402/core with the @x402/evm exact scheme) for `account`, allowed
 * to pay the test token; with `identifier`, every payload it signs carries it as its
 * payment-identifier.
 */
export function x402Payer(chain: ChainHandle, account: PrivateKeyAccount, identifier?: string): x402Client {
  const client = new x402Client();
  registerExactEvmScheme(client, { signer: account, networks: [chain.network as Network] });
  client.setSpendControls({
    allowedAssets: [{ network: chain.network as Network, asset: chain.usdc.address, maxAmountPerPayment: '5000000' }],
  });
  if (identifier) {
    client.registerExtension({
      key: PAYMENT_IDENTIFIER,
      enrichPaymentPayload: async (payload, required) => {
        const declared = required.extensions?.[PAYMENT_IDENTIFIER];
        if (!declared) return payload;
        const extensions = { ...payload.extensions, [PAYMENT_IDENTIFIER]: structuredClone(declared) };
        return { ...payload, extensions: appendPaymentIdentifierToExtensions(extensions, identifier) };
      },
    });
  }
  return client;
}

/**
 * An official v2 client (@x402/fetch) that sends `id` as its x402 payment identifier (the
 * `payment-identifier` extension, through a client extension), and every PAYMENT-SIGNATURE it sent.
 */
export function identifiedPayer(chain: ChainHandle, account: PrivateKeyAccount, id: string) {
  const client = x402Payer(chain, account, id);
  const sent: string[] = [];
  const recording: typeof fetch = async (input, init) => {
    const request = new Request(input, init);
    const header = request.headers.get('payment-signature');
    if (header) sent.push(header);
    return fetch(request);
  };
  return { pay: wrapFetchV2(recording, client) as typeof fetch, sent };
}

export function balanceOf(chain: ChainHandle, address: Address): Promise<bigint> {
  return chain.publicClient.readContract({
    address: chain.usdc.address,
    abi: erc20Abi,
    functionName: 'balanceOf',
    args: [address],
  });
}

const TRANSFER_WITH_AUTHORIZATION = {
  TransferWithAuthorization: [
    { name: 'from', type: 'address' },
    { name: 'to', type: 'address' },
    { name: 'value', type: 'uint256' },
    { name: 'validAfter', type: 'uint256' },
    { name: 'validBefore', type: 'uint256' },
    { name: 'nonce', type: 'bytes32' },
  ],
} as const;

export interface Authorization {
  from: Address;
  to: Address;
  value: bigint;
  validAfter: bigint;
  validBefore: bigint;
  nonce: Hex;
}

/** Signs an EIP-3009 authorization by hand, so tests can send payments that are wrong on purpose. */
export async function signAuthorization(
  account: PrivateKeyAccount,
  chain: ChainHandle,
  auth: Partial<Authorization> & { to: Address; value: bigint },
  domain: { name?: string; version?: string; verifyingContract?: Address; chainId?: number } = {},
) {
  const now = BigInt(Math.floor(Date.now() / 1000));
  const authorization: Authorization = {
    from: account.address,
    validAfter: now - 600n,
    validBefore: now + 300n,
    nonce: `0x${Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('hex')}`,
    ...auth,
  };
  const signature = await account.signTypedData({
    domain: {
      name: domain.name ?? chain.usdc.name,
      version: domain.version ?? chain.usdc.version,
      chainId: domain.chainId ?? chain.chainId,
      verifyingContract: domain.verifyingContract ?? chain.usdc.address,
    },
    types: TRANSFER_WITH_AUTHORIZATION,
    primaryType: 'TransferWithAuthorization',
    message: authorization,
  });
  return { authorization, signature };
}

/** An authorization as the wire carries it (amounts and times as decimal strings). */
export const wire = (a: Authorization) => ({
  from: a.from,
  to: a.to,
  value: a.value.toString(),
  validAfter: a.validAfter.toString(),
  validBefore: a.validBefore.toString(),
  nonce: a.nonce,
});

/** A v2 PAYMENT-SIGNATURE header for a hand-signed authorization against `accepted`. */
export function v2Header(
  accepted: PaymentRequirements,
  signed: { authorization: Authorization; signature: Hex },
): string {
  return encodePaymentSignatureHeader({
    x402Version: 2,
    accepted,
    payload: { signature: signed.signature, authorization: wire(signed.authorization) },
  });
}

/** A v1 X-PAYMENT header for a hand-signed authorization. */
export function v1Header(network: string, signed: { authorization: Authorization; signature: Hex }): string {
  const payload = {
    x402Version: 1,
    scheme: 'exact',
    network,
    payload: { signature: signed.signature, authorization: wire(signed.authorization) },
  };
  return Buffer.from(JSON.stringify(payload)).toString('base64');
}
