import {
  createPublicClient,
  createWalletClient,
  defineChain,
  getAddress,
  http,
  type Abi,
  type Account,
  type Address,
  type Chain,
  type Hash,
  type Hex,
  type PublicClient,
  type Transport,
  type WalletClient,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';

/** Where Multicall3 lives on every chain (and where we plant it on anvil). */
export const MULTICALL3_ADDRESS: Address = '0xcA11bde05977b3631167028862bE2a173976CA11';

/** A wallet client that always has an account and a chain, so writes need neither. */
export type SignerClient = WalletClient<Transport, Chain, Account>;

/** What deploy and mint helpers need: a reader and a signer on the same chain. */
export interface ChainContext {
  publicClient: PublicClient<Transport, Chain>;
  walletClient: SignerClient;
}

/**
 * A viem chain for a local node. It is not viem's `baseSepolia` even when the id is 84532:
 * that object carries public RPC URLs and OP-stack formatters that do not apply to anvil.
 */
export function localChain(chainId: number, rpcUrl: string): Chain {
  return defineChain({
    id: chainId,
    name: `Local dev chain ${chainId}`,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
    contracts: { multicall3: { address: MULTICALL3_ADDRESS } },
  });
}

/** Public and wallet clients for `privateKey` on a local node; polls fast because anvil mines instantly. */
export function localClients(chain: Chain, privateKey: Hex): ChainContext {
  const transport = http(chain.rpcUrls.default.http[0]);
  return {
    publicClient: createPublicClient({ chain, transport, pollingInterval: 50 }),
    walletClient: createWalletClient({
      chain,
      transport,
      account: privateKeyToAccount(privateKey),
      pollingInterval: 50,
    }),
  };
}

/** Waits for a transaction and throws (with `what` in the message) if it reverted. */
export async function confirm(ctx: ChainContext, hash: Hash, what: string) {
  const receipt = await ctx.publicClient.waitForTransactionReceipt({ hash });
  if (receipt.status !== 'success') throw new Error(`${what} reverted (tx ${hash})`);
  return receipt;
}

/** Deploys a contract from creation bytecode and returns its address once mined. */
export async function deployBytecode(
  ctx: ChainContext,
  what: string,
  abi: Abi,
  bytecode: Hex,
  args: readonly unknown[] = [],
): Promise<Address> {
  const hash = await ctx.walletClient.deployContract({ abi, bytecode, args });
  const receipt = await confirm(ctx, hash, `deploying ${what}`);
  if (!receipt.contractAddress) throw new Error(`deploying ${what}: no contract address in receipt ${hash}`);
  return getAddress(receipt.contractAddress); // receipts carry lowercase addresses
}
