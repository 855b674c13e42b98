import { decodeFunctionData, parseAbiItem, serializeSignature, type Address, type Hex } from 'viem';
import type { ChainHandle } from '../../src/platform/blockchain.js';
import { multicall3Abi } from '../../src/platform/chain/multicall3.js';
import { usdcAbi } from '../../src/platform/chain/usdc.js';
import { testClient } from './anvil.js';
import type { Authorization } from './buyers.js';

const AuthorizationUsed = parseAbiItem('event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)');

/**
 * What an attacker who reads the chain learns: every signed authorization a settlement
 * transaction carries, signature included. Settlements are batched, so the token calls are the
 * calls of a Multicall3 aggregate3.
 */
export function authorizationsInCalldata(input: Hex): Array<{ authorization: Authorization; signature: Hex }> {
  const batch = decodeFunctionData({ abi: multicall3Abi, data: input });
  const inner = (batch.args?.[0] ?? []) as ReadonlyArray<{ callData: Hex }>;
  return inner.map((c) => {
    const { args } = decodeFunctionData({ abi: usdcAbi, data: c.callData }) as { args: readonly unknown[] };
    const [from, to, value, validAfter, validBefore, nonce, v, r, s] = args as [
      Address,
      Address,
      bigint,
      bigint,
      bigint,
      Hex,
      number,
      Hex,
      Hex,
    ];
    return {
      authorization: { from, to, value, validAfter, validBefore, nonce },
      signature: serializeSignature({ r, s, v: BigInt(v) }),
    };
  });
}

/** `payer`'s authorization as a settlement transaction still in the mempool carries it (automine off). */
export async function copyFromMempool(chain: ChainHandle, payer: Address) {
  const pool = await testClient(chain).getTxpoolContent();
  for (const byNonce of Object.values(pool.pending)) {
    for (const tx of Object.values(byNonce)) {
      const found = authorizationsInCalldata(tx.input).find(
        (a) => a.authorization.from.toLowerCase() === payer.toLowerCase(),
      );
      if (found) return found;
    }
  }
  throw new Error(`no pending settlement carries an authorization of ${payer}`);
}

/** `payer`'s authorization as its mined settlement transaction published it. */
export async function copyFromChain(chain: ChainHandle, payer: Address) {
  const [log] = await chain.publicClient.getLogs({
    address: chain.usdc.address,
    event: AuthorizationUsed,
    args: { authorizer: payer },
    fromBlock: 0n,
  });
  const tx = await chain.publicClient.getTransaction({ hash: log!.transactionHash! });
  const found = authorizationsInCalldata(tx.input).find(
    (a) => a.authorization.from.toLowerCase() === payer.toLowerCase(),
  );
  if (!found) throw new Error(`no transfer of ${payer} in settlement ${tx.hash}`);
  return found;
}
