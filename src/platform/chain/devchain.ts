import type { Address, Chain, Hash, Hex, PublicClient, Transport } from 'viem';
import { startAnvil } from './anvil.js';
import { localChain, localClients } from './clients.js';
import { deployIdentityRegistry } from './identity-registry.js';
import { plantMulticall3 } from './multicall3.js';
import { deployUsdc, mintUsdc, type UsdcToken } from './usdc.js';

/** A funded key on the dev chain. */
export interface DevAccount {
  address: Address;
  privateKey: Hex;
}

/** A running local chain with USDC, an ERC-8004 IdentityRegistry and Multicall3. */
export interface DevChain {
  rpcUrl: string;
  chainId: number;
  /** viem chain object for this node (multicall3 address included). */
  chain: Chain;
  usdc: UsdcToken;
  identityRegistry: Address;
  accounts: {
    /** Deploys everything and holds every USDC role; the faucet mints from it. */
    deployer: DevAccount;
    /** Submits settlements for the built-in x402 facilitator (pays gas). */
    facilitator: DevAccount;
    /** The marketplace's receiving wallet. */
    treasury: DevAccount;
  };
  /** Mints `atomicAmount` test USDC (6 decimals) to `to`; resolves with the mined tx hash. */
  faucet(to: Address, atomicAmount: bigint): Promise<Hash>;
  publicClient: PublicClient<Transport, Chain>;
  /** Stops anvil; all state is lost. */
  stop(): Promise<void>;
}

export interface StartDevChainOptions {
  /** Defaults to 84532 (Base Sepolia), the id x402 v1 clients know as `base-sepolia`. */
  chainId?: number;
  /** Defaults to a free loopback port. */
  port?: number;
}

// anvil's default accounts 0..2 (mnemonic "test test ... junk"). Public, well-known keys:
// hard-coded because deriving them from the mnemonic costs more than the whole deployment.
const ANVIL_ACCOUNTS: readonly DevAccount[] = [
  {
    address: '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266',
    privateKey: '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80',
  },
  {
    address: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
    privateKey: '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d',
  },
  {
    address: '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC',
    privateKey: '0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a',
  },
];

/** The private key of a well-known dev chain account (anvil's defaults), or undefined for any other address. */
export function devAccountKey(address: Address): Hex | undefined {
  return ANVIL_ACCOUNTS.find((a) => a.address.toLowerCase() === address.toLowerCase())?.privateKey;
}

/**
 * Starts anvil and deploys the contracts the service needs: Circle's FiatTokenV2_2 as USDC,
 * our ERC-8004 IdentityRegistry, and Multicall3 at its canonical address. Typically ready in
 * well under a second. If any step fails, anvil is stopped before the error propagates.
 */
export async function startDevChain(opts: StartDevChainOptions = {}): Promise<DevChain> {
  const anvil = await startAnvil({ chainId: opts.chainId, port: opts.port });
  try {
    const chain = localChain(anvil.chainId, anvil.rpcUrl);
    const [deployer, facilitator, treasury] = ANVIL_ACCOUNTS as [DevAccount, DevAccount, DevAccount];
    const ctx = localClients(chain, deployer.privateKey);

    // setCode needs no nonce, so it overlaps with the deployer's (sequential) transactions.
    const planted = plantMulticall3(anvil.rpcUrl);
    const usdc = await deployUsdc(ctx);
    const identityRegistry = await deployIdentityRegistry(ctx);
    await planted;

    // Faucet calls share the deployer's nonce: run them one at a time.
    let queue: Promise<unknown> = Promise.resolve();
    const faucet = (to: Address, atomicAmount: bigint): Promise<Hash> => {
      if (atomicAmount <= 0n) return Promise.reject(new RangeError('faucet amount must be positive'));
      const minted = queue.then(() => mintUsdc(ctx, usdc.address, to, atomicAmount));
      queue = minted.catch(() => undefined);
      return minted;
    };

    return {
      rpcUrl: anvil.rpcUrl,
      chainId: anvil.chainId,
      chain,
      usdc,
      identityRegistry,
      accounts: { deployer, facilitator, treasury },
      faucet,
      publicClient: ctx.publicClient,
      stop: anvil.stop,
    };
  } catch (err) {
    await anvil.stop();
    throw err;
  }
}
