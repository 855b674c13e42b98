import type { Address, Chain, Hash, PublicClient, Transport } from 'viem';
import { startAnvil } from './anvil.js';
import { localChain, localClients } from './clients.js';
import { deployIdentityRegistry } from './identity-registry.js';
import { plantMulticall3 } from './multicall3.js';
import { deployReputationRegistry } from './reputation-registry.js';
import { deployUsdc, mintUsdc, type UsdcToken } from './usdc.js';
import { ANVIL_ACCOUNTS, type DevAccount } from './dev-accounts.js';

export type { DevAccount };

/** A running local chain with USDC, ERC-8004 Identity and Reputation Registries, and Multicall3. */
export interface DevChain {
  rpcUrl: string;
  chainId: number;
  /** viem chain object for this node (multicall3 address included). */
  chain: Chain;
  usdc: UsdcToken;
  identityRegistry: Address;
  /** ERC-8004 ReputationRegistry bound to `identityRegistry`. */
  reputationRegistry: Address;
  accounts: {
    /** Deploys everything and holds every USDC role; the faucet mints from it. */
    deployer: DevAccount;
    /** Submits settlements for the built-in x402 facilitator (pays gas). */
    facilitator: DevAccount;
    /** The marketplace's receiving wallet. */
    treasury: DevAccount;
  };
  /**
   * Mints `atomicAmount` test USDC (6 decimals) to `to` and tops its test ETH up to FAUCET_GAS_WEI
   * (paying with USDC needs no gas; registering an ERC-8004 identity does); resolves with the
   * mint's mined tx hash.
   */
  faucet(to: Address, atomicAmount: bigint): Promise<Hash>;
  publicClient: PublicClient<Transport, Chain>;
  /** Stops anvil; all state is lost. */
  stop(): Promise<void>;
}

/** Test ETH the faucet leaves an address with at least: gas for a few identity transactions. */
export const FAUCET_GAS_WEI = 10n ** 16n;

export interface StartDevChainOptions {
  /** Defaults to 84532 (Base Sepolia), the id x402 v1 clients know as `base-sepolia`. */
  chainId?: number;
  /** Defaults to a free loopback port. */
  port?: number;
}

/**
 * Starts anvil and deploys the contracts the service needs: Circle's FiatTokenV2_2 as USDC,
 * our ERC-8004 IdentityRegistry and a ReputationRegistry bound to it, and Multicall3 at its
 * canonical address. Typically ready in well under a second. If any step fails, anvil is stopped
 * before the error propagates.
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
    const reputationRegistry = await deployReputationRegistry(ctx, identityRegistry);
    await planted;

    // Faucet calls share the deployer's nonce: run them one at a time.
    let queue: Promise<unknown> = Promise.resolve();
    const faucet = (to: Address, atomicAmount: bigint): Promise<Hash> => {
      if (atomicAmount <= 0n) return Promise.reject(new RangeError('faucet amount must be positive'));
      const minted = queue.then(async () => {
        const hash = await mintUsdc(ctx, usdc.address, to, atomicAmount);
        // anvil sets a balance without a transaction, so no nonce is involved.
        if ((await ctx.publicClient.getBalance({ address: to })) < FAUCET_GAS_WEI)
          await ctx.publicClient.request({
            method: 'anvil_setBalance',
            params: [to, `0x${FAUCET_GAS_WEI.toString(16)}`],
          } as never);
        return hash;
      });
      queue = minted.catch(() => undefined);
      return minted;
    };

    return {
      rpcUrl: anvil.rpcUrl,
      chainId: anvil.chainId,
      chain,
      usdc,
      identityRegistry,
      reputationRegistry,
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
