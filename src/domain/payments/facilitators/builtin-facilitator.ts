import { x402Facilitator } from '@x402/core/facilitator';
import { toFacilitatorEvmSigner } from '@x402/evm';
import { ExactEvmScheme } from '@x402/evm/exact/facilitator';
import { ExactEvmSchemeV1 } from '@x402/evm/exact/v1/facilitator';
import {
  createPublicClient,
  createWalletClient,
  http,
  isAddress,
  isHex,
  publicActions,
  type Abi,
  type Address,
  type Chain,
  type Hex,
  type TypedData,
  type TypedDataDefinition,
  type TypedDataDomain,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { createNonceManager, jsonRpc } from 'viem/nonce';
import { memoizeFor } from '../../../platform/memoize.js';
import { isTypedDataSigner } from '../../../platform/secp256k1.js';
import { BATCH_CONFIRMATION_TIMEOUT_MS, BATCH_MAX_QUEUE_WAIT_MS, BatchSettler } from './batch-settler.js';
import { batchableTransfer } from '../protocol/eip3009.js';
import { withFreshNonceOnConflict } from './nonce-sender.js';
import { callsOf, whenReady, type Facilitator } from './facilitator.js';
import { v1NetworkName } from '../protocol/x402-codec.js';

/** How long the official x402 signer waits for the receipt of a payment settled on its own (no batch). */
const SIGNER_CONFIRMATION_TIMEOUT_MS = 30_000;

/**
 * How long a settle through the built-in facilitator may take: up to `beforeSendMs` until its
 * transaction is sent (a batch's queue wait; the official signer's reads and simulation), then up
 * to `receiptWaitMs` for its receipt. The reconciler's stuck threshold must exceed their sum, or it
 * would send an authorization that a live request is still settling (checked where the service is
 * composed, src/bootstrap/settlement-bounds.ts).
 */
export const BUILTIN_SETTLE_BOUNDS = {
  beforeSendMs: BATCH_MAX_QUEUE_WAIT_MS,
  receiptWaitMs: Math.max(BATCH_CONFIRMATION_TIMEOUT_MS, SIGNER_CONFIRMATION_TIMEOUT_MS),
} as const;

export interface BuiltinFacilitatorOptions {
  rpcUrl: string;
  chain: Chain;
  privateKey: Hex;
  /** How often to poll for a settlement's receipt: fast on a local chain, near the block time elsewhere. */
  pollingIntervalMs?: number;
  /** How long fee estimates are reused across settlements (about a block time). */
  feeCacheMs?: number;
  /**
   * The most authorizations settled in one transaction (batch-settler.ts); 0 settles each payment
   * in a transaction of its own through the official exact scheme. Default 50.
   */
  batchMax?: number;
}

type Wallet = ReturnType<typeof createWalletClient> & ReturnType<typeof publicActions>;

/** The typed data the exact EVM scheme asks the signer to check, as viem takes it. */
type SignedTypedData = TypedDataDefinition & { address: Address; signature: Hex };

/**
 * An EOA's signature is checked by local recovery; only when that does not match (a smart-contract
 * wallet) is it verified on chain through ERC-1271/6492, which costs an RPC and an EVM call.
 */
async function verifyTypedDataFast(wallet: Wallet, args: SignedTypedData): Promise<boolean> {
  if (isTypedDataSigner(args.address, args, args.signature)) return true;
  // Not a plain 65-byte ECDSA signature of this address: let the chain decide.
  return wallet.verifyTypedData(args);
}

/**
 * EIP-1559 fees, estimated at most once per `ttlMs` instead of twice per settlement. A chain
 * that answers without EIP-1559 fees cannot take the scheme's transactions: that fails the
 * settlement before anything is sent.
 */
function feeCache(wallet: Wallet, ttlMs: number) {
  return memoizeFor(ttlMs, async () => {
    const { maxFeePerGas, maxPriorityFeePerGas } = await wallet.estimateFeesPerGas();
    if (maxFeePerGas === undefined || maxPriorityFeePerGas === undefined) {
      throw new Error('the chain gave no EIP-1559 fee estimate');
    }
    return { maxFeePerGas, maxPriorityFeePerGas };
  });
}

/**
 * The exact EVM scheme hands the signer its own viem ABI constants, declared loosely
 * (`readonly unknown[]`) by the signer interface: an ABI is a list of entries that each name
 * their `type`.
 */
function asAbi(abi: readonly unknown[]): Abi {
  if (!isAbi(abi)) throw new TypeError('the payment scheme passed something other than an ABI');
  return abi;
}

function isAbi(abi: readonly unknown[]): abi is Abi {
  return abi.every((entry) => typeof entry === 'object' && entry !== null && 'type' in entry);
}

/**
 * `registerV1` as it behaves: it registers v1 network names (`base-sepolia`), which its
 * declaration, written for CAIP-2 identifiers, does not admit. Method syntax, so the facilitator
 * is assignable to it as it is.
 */
interface V1Registry {
  registerV1(networks: string | `${string}:${string}`[], scheme: ExactEvmSchemeV1): unknown;
}

function v1Registry(facilitator: V1Registry): V1Registry {
  return facilitator;
}

/** The official `x402Facilitator` with the exact EVM scheme for v2 (CAIP-2) and v1 (network name) payloads. */
export function builtinFacilitator(opts: BuiltinFacilitatorOptions): Facilitator {
  // A nonce manager hands out nonces locally: concurrent settlements from one key would otherwise
  // read the same pending nonce from the node and collide. One per facilitator, not viem's shared
  // one: that caches by address and chain id across instances, so a second chain with the same id
  // in one process (tests) would inherit the first one's nonces.
  const nonceManager = createNonceManager({ source: jsonRpc() });
  const account = privateKeyToAccount(opts.privateKey, { nonceManager });
  const wallet = createWalletClient({
    account,
    chain: opts.chain,
    transport: http(opts.rpcUrl),
    pollingInterval: opts.pollingIntervalMs ?? 250,
  }).extend(publicActions);
  // Sends go through a transport that never retries by itself: a retried eth_sendRawTransaction
  // whose first attempt reached the node answers "nonce too low" for our own transaction, and the
  // resend below would then take a landed transfer for a refused one.
  const sender = createWalletClient({ account, chain: opts.chain, transport: http(opts.rpcUrl, { retryCount: 0 }) });
  const fees = feeCache(wallet, opts.feeCacheMs ?? 2000);
  const signer = toFacilitatorEvmSigner(
    {
      address: account.address,
      readContract: (a) => wallet.readContract({ ...a, abi: asAbi(a.abi) }),
      verifyTypedData: (a) => verifyTypedDataFast(wallet, typedDataOf(a)),
      writeContract: (a) =>
        withFreshNonceOnConflict(
          async () => sender.writeContract({ ...a, abi: asAbi(a.abi), ...(await fees()) }),
          () => nonceManager.reset({ address: account.address, chainId: opts.chain.id }),
        ),
      sendTransaction: (a) => wallet.sendTransaction(a),
      waitForTransactionReceipt: (a) =>
        receiptOf(
          () => wallet.getTransactionReceipt({ hash: a.hash }),
          () => wallet.waitForTransactionReceipt(a),
          opts.pollingIntervalMs ?? 250,
        ),
      getCode: (a) => wallet.getCode(a),
    },
    { confirmationTimeoutMs: SIGNER_CONFIRMATION_TIMEOUT_MS },
  );
  // Registered by hand, for our chain only: the package's helper would also advertise every v1
  // network name against this one RPC.
  // simulateInSettle: settle simulates the transfer before sending it, so an authorization that
  // would revert (no balance, used nonce) is refused without burning the facilitator's gas.
  const facilitator = new x402Facilitator().register(
    `eip155:${opts.chain.id}`,
    new ExactEvmScheme(signer, { simulateInSettle: true }),
  );
  const v1 = v1NetworkName(opts.chain.id);
  if (v1) v1Registry(facilitator).registerV1(v1, new ExactEvmSchemeV1(signer, { simulateInSettle: true }));
  const calls = callsOf(facilitator);
  const batchMax = opts.batchMax ?? 50;
  const batches =
    batchMax > 0
      ? new BatchSettler({
          chain: opts.chain,
          account,
          client: createPublicClient({ chain: opts.chain, transport: http(opts.rpcUrl) }),
          sendRawTransaction: (serializedTransaction) => sender.sendRawTransaction({ serializedTransaction }),
          fees,
          maxBatch: batchMax,
          pollingIntervalMs: opts.pollingIntervalMs ?? 250,
        })
      : undefined;
  return {
    name: 'builtin',
    kind: 'builtin',
    settleVerifies: true,
    settleTakesReady: true,
    verify: (r) => calls.verify(r.payload, r.requirements),
    // A plain EIP-3009 authorization goes into the next batch, which is checked and simulated
    // while the payment is being recorded; anything else (a smart-wallet signature, Permit2) is
    // settled on its own by the official scheme, once it is recorded.
    settle: (r, ready) => {
      const transfer = batches && batchableTransfer(r);
      return transfer
        ? batches.settle(transfer, ready)
        : whenReady(ready, () => calls.settle(r.payload, r.requirements));
    },
    supported: async () => facilitator.getSupported(),
    // Its supported kinds are in this process; what it needs from outside is the chain's RPC.
    ping: async () => {
      await wallet.getBlockNumber({ cacheTime: 0 });
    },
  };
}

/**
 * The signer's typed-data arguments in viem's types. The exact scheme builds them from viem's own
 * EIP-712 definitions; the signer interface declares them as plain records, so they are checked
 * back into shape here.
 */
function typedDataOf(a: {
  address: Address;
  domain: Record<string, unknown>;
  types: Record<string, unknown>;
  primaryType: string;
  message: Record<string, unknown>;
  signature: Hex;
}): SignedTypedData {
  const { domain, types } = a;
  if (!isTypedDataDomain(domain) || !isTypedData(types)) {
    throw new TypeError('the payment scheme passed typed data that is not EIP-712');
  }
  return { address: a.address, signature: a.signature, domain, types, primaryType: a.primaryType, message: a.message };
}

function isTypedDataDomain(domain: Record<string, unknown>): domain is TypedDataDomain {
  const { name, version, chainId, verifyingContract, salt } = domain;
  return (
    (name === undefined || typeof name === 'string') &&
    (version === undefined || typeof version === 'string') &&
    (chainId === undefined || typeof chainId === 'number' || typeof chainId === 'bigint') &&
    (verifyingContract === undefined ||
      (typeof verifyingContract === 'string' && isAddress(verifyingContract, { strict: false }))) &&
    (salt === undefined || (typeof salt === 'string' && isHex(salt)))
  );
}

function isTypedData(types: Record<string, unknown>): types is TypedData {
  return Object.values(types).every(
    (fields) =>
      Array.isArray(fields) &&
      fields.every(
        (f) => typeof f === 'object' && f !== null && typeof f.name === 'string' && typeof f.type === 'string',
      ),
  );
}

/**
 * Asks for the receipt once before waiting for it. A chain that mines on arrival (anvil) has it
 * already, and skipping the block watcher matters under load: with N settlements waiting, every
 * new block made each of them fetch its receipt again (N² requests per second).
 *
 * While the watcher waits, the receipt is also asked for directly, at growing intervals (from
 * `intervalMs`, doubling up to 1 s). The watcher fetches a receipt only when a new block comes:
 * when the block holding the transaction was already the head at its first look but the node did
 * not serve the receipt yet, and no later block comes (anvil mines only on arrival; one buyer
 * waiting is the only traffic), it would wait out the whole confirmation timeout.
 */
export async function receiptOf<R>(get: () => Promise<R>, wait: () => Promise<R>, intervalMs: number): Promise<R> {
  const found = async () => {
    try {
      return await get();
    } catch {
      // Not mined yet (viem throws TransactionReceiptNotFoundError).
      return undefined;
    }
  };
  const first = await found();
  if (first) return first;
  let settled = false;
  const poll = async (): Promise<R> => {
    for (let delay = Math.max(1, intervalMs); ; delay = Math.min(delay * 2, 1000)) {
      await new Promise((r) => setTimeout(r, delay).unref());
      // Once the watcher has answered (or timed out), this loop's result goes nowhere: stop.
      if (settled) return new Promise<R>(() => {});
      const receipt = await found();
      if (receipt) return receipt;
    }
  };
  try {
    return await Promise.race([wait(), poll()]);
  } finally {
    settled = true;
  }
}
