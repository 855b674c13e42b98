import {
  BrokenCircuitError,
  CircuitState,
  ConsecutiveBreaker,
  circuitBreaker,
  handleAll,
  type CircuitBreakerPolicy,
} from 'cockatiel';
import {
  createWalletClient,
  http,
  isAddressEqual,
  publicActions,
  recoverTypedDataAddress,
  type Address,
  type Chain,
  type Hex,
} from 'viem';
import { createNonceManager, jsonRpc } from 'viem/nonce';
import { memoizeFor } from '../../platform/memoize.js';
import { privateKeyToAccount } from 'viem/accounts';
import { x402Facilitator } from '@x402/core/facilitator';
import { HTTPFacilitatorClient } from '@x402/core/server';
import { ExactEvmScheme } from '@x402/evm/exact/facilitator';
import { ExactEvmSchemeV1 } from '@x402/evm/exact/v1/facilitator';
import { toFacilitatorEvmSigner } from '@x402/evm';
import type { SettleError, VerifyError } from '@x402/core/types';
import {
  type Network,
  type PaymentPayload,
  type PaymentRequirements,
  type SettleResponse,
  type SupportedResponse,
  type VerifyResponse,
} from '@x402/core/types';
import { v1NetworkName } from './x402-codec.js';
import type { Logger } from '../../platform/logger.js';
import { withTimeout } from '../../platform/timeout.js';

/**
 * One interface over every facilitator: the built-in one (the official x402 facilitator with a
 * local key, in this process) and remote ones over the facilitator HTTP API. Each sits behind
 * its own circuit breaker; the pool tries them in order.
 */
export interface Facilitator {
  name: string;
  kind: 'builtin' | 'remote';
  url?: string;
  /**
   * Whether `settle` itself runs the complete verification, simulation included, before it sends
   * anything. Then a separate `verify` call repeats work (a signature recovery and several RPCs).
   */
  settleVerifies: boolean;
  verify(payload: PaymentPayload, requirements: PaymentRequirements): Promise<VerifyResponse>;
  settle(payload: PaymentPayload, requirements: PaymentRequirements): Promise<SettleResponse>;
  supported(): Promise<SupportedResponse>;
  /**
   * A call that moves no money and succeeds only when the facilitator can work now: the trial a
   * half-open breaker lets through, so that no payment is ever the trial.
   */
  ping(): Promise<void>;
}

export interface BuiltinFacilitatorOptions {
  rpcUrl: string;
  chain: Chain;
  privateKey: Hex;
  /** How often to poll for a settlement's receipt: fast on a local chain, near the block time elsewhere. */
  pollingIntervalMs?: number;
  /** How long fee estimates are reused across settlements (about a block time). */
  feeCacheMs?: number;
}

type Wallet = ReturnType<typeof createWalletClient> & ReturnType<typeof publicActions>;

/**
 * An EOA's signature is checked by local recovery; only when that does not match (a smart-contract
 * wallet) is it verified on chain through ERC-1271/6492, which costs an RPC and an EVM call.
 */
async function verifyTypedDataFast(
  wallet: Wallet,
  args: Parameters<typeof recoverTypedDataAddress>[0] & { address: Address },
): Promise<boolean> {
  try {
    const recovered = await recoverTypedDataAddress(args);
    if (isAddressEqual(recovered, args.address)) return true;
  } catch {
    // Not a plain 65-byte ECDSA signature: let the chain decide below.
  }
  return wallet.verifyTypedData(args as never);
}

/** EIP-1559 fees, estimated at most once per `ttlMs` instead of twice per settlement. */
function feeCache(wallet: Wallet, ttlMs: number) {
  return memoizeFor(ttlMs, () =>
    wallet
      .estimateFeesPerGas()
      .then((f) => ({ maxFeePerGas: f.maxFeePerGas!, maxPriorityFeePerGas: f.maxPriorityFeePerGas! })),
  );
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
      readContract: (a) => wallet.readContract(a as never),
      verifyTypedData: (a) =>
        verifyTypedDataFast(wallet, a as Parameters<typeof recoverTypedDataAddress>[0] & { address: Address }),
      writeContract: (a) =>
        withFreshNonceOnConflict(
          async () => sender.writeContract({ ...(a as object), ...(await fees()) } as never),
          () => nonceManager.reset({ address: account.address, chainId: opts.chain.id }),
        ),
      sendTransaction: (a) => wallet.sendTransaction(a),
      waitForTransactionReceipt: (a) =>
        receiptOf(
          () => wallet.getTransactionReceipt({ hash: a.hash }),
          () => wallet.waitForTransactionReceipt(a),
        ),
      getCode: (a) => wallet.getCode(a),
    },
    { confirmationTimeoutMs: 30_000 },
  );
  // Registered by hand, for our chain only: the package's helper would also advertise every v1
  // network name against this one RPC.
  // simulateInSettle: settle simulates the transfer before sending it, so an authorization that
  // would revert (no balance, used nonce) is refused without burning the facilitator's gas.
  const facilitator = new x402Facilitator().register(
    `eip155:${opts.chain.id}` as Network,
    new ExactEvmScheme(signer, { simulateInSettle: true }),
  );
  const v1 = v1NetworkName(opts.chain.id);
  if (v1) facilitator.registerV1(v1 as Network, new ExactEvmSchemeV1(signer, { simulateInSettle: true }));
  return {
    name: 'builtin',
    kind: 'builtin',
    settleVerifies: true,
    verify: (p, r) => facilitator.verify(p, r),
    settle: (p, r) => facilitator.settle(p, r),
    supported: async () => facilitator.getSupported() as SupportedResponse,
    // Its supported kinds are in this process; what it needs from outside is the chain's RPC.
    ping: async () => {
      await wallet.getBlockNumber({ cacheTime: 0 });
    },
  };
}

/**
 * The node refused the transaction because its nonce was taken: another process settles with the
 * same key (replicas sharing FACILITATOR_PRIVATE_KEY, which docs/operations.md advises against), or
 * the local count drifted. `send` must make exactly one eth_sendRawTransaction attempt (a transport
 * without retries): then the refusal means this transaction was not accepted, and it is safe to
 * forget the local count, read the pending one again and resend. Even a wrong guess cannot charge
 * twice (the EIP-3009 authorization nonce is single-use); it could only fail a resend.
 */
export async function withFreshNonceOnConflict<T>(
  send: () => Promise<T>,
  resetNonce: () => void,
  attempts = 6,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await send();
    } catch (err) {
      const text = `${(err as Error)?.message ?? ''} ${(err as { details?: string })?.details ?? ''}`;
      if (
        attempt >= attempts ||
        !/nonce too low|nonce.*lower than the current|replacement transaction underpriced/i.test(text)
      )
        throw err;
      resetNonce();
      await new Promise((r) => setTimeout(r, 5 + Math.random() * 20 * attempt));
    }
  }
}

/**
 * Asks for the receipt once before waiting for it. A chain that mines on arrival (anvil) has it
 * already, and skipping the block watcher matters under load: with N settlements waiting, every
 * new block made each of them fetch its receipt again (N² requests per second).
 */
async function receiptOf<R>(get: () => Promise<R>, wait: () => Promise<R>): Promise<R> {
  try {
    const receipt = await get();
    if (receipt) return receipt;
  } catch {
    // Not mined yet (viem throws TransactionReceiptNotFoundError): wait for it below.
  }
  return wait();
}

/** A remote facilitator over the x402 facilitator HTTP API (`/verify`, `/settle`, `/supported`). */
export function remoteFacilitator(url: string, timeoutMs = 10_000): Facilitator {
  const client = new HTTPFacilitatorClient({ url: url.replace(/\/+$/, ''), timeoutMs });
  return {
    name: new URL(url).host,
    kind: 'remote',
    url,
    // A remote facilitator's settle may verify too, but its verify is where failover is free.
    settleVerifies: false,
    verify: (p, r) => answerOf(client.verify(p, r)),
    settle: (p, r) => answerOf(client.settle(p, r)),
    supported: () => client.getSupported(),
    ping: async () => {
      await client.getSupported();
    },
  };
}

/**
 * A facilitator that refuses a payment with a 4xx status still answered: the client throws
 * VerifyError or SettleError carrying the response, which is a refusal to pass on, not an outage
 * to count against the breaker (three bad payments would otherwise open it).
 */
async function answerOf<T>(call: Promise<T>): Promise<T> {
  try {
    return await call;
  } catch (err) {
    if (isRefusal<VerifyError>(err, 'VerifyError')) {
      return {
        isValid: false,
        invalidReason: err.invalidReason ?? 'invalid_payment',
        invalidMessage: err.invalidMessage,
        payer: err.payer,
      } as T;
    }
    if (isRefusal<SettleError>(err, 'SettleError')) {
      return {
        success: false,
        errorReason: err.errorReason ?? 'settlement_refused',
        errorMessage: err.errorMessage,
        transaction: err.transaction ?? '',
        network: err.network,
        payer: err.payer,
      } as T;
    }
    throw err;
  }
}

/**
 * By class name, not `instanceof`: @x402/core is loaded twice here (its server entry and its
 * types entry reach different copies of the error classes), so `instanceof VerifyError` is false
 * for the very errors HTTPFacilitatorClient throws. Seen in the facilitator tests.
 */
function isRefusal<E extends Error>(err: unknown, name: 'VerifyError' | 'SettleError'): err is E {
  return err instanceof Error && err.name === name && typeof (err as { statusCode?: unknown }).statusCode === 'number';
}

export type BreakerState = 'closed' | 'open' | 'half-open';

export interface FacilitatorStatus {
  name: string;
  kind: Facilitator['kind'];
  url?: string;
  state: BreakerState;
  consecutiveFailures: number;
  lastError: string | null;
  lastErrorAt: string | null;
  lastSuccessAt: string | null;
  openedAt: string | null;
}

interface Member {
  facilitator: Facilitator;
  breaker: CircuitBreakerPolicy;
  status: FacilitatorStatus;
  /** When the breaker last opened, on the clock cockatiel uses to decide that a trial is due. */
  openedAtMs: number;
  trialTimer: NodeJS.Timeout | undefined;
}

/** Every facilitator is down or its breaker is open: a paid request gets 503 and nothing is charged. */
export class AllFacilitatorsUnavailableError extends Error {
  constructor(
    readonly retryAfterSeconds: number,
    readonly errors: string[],
  ) {
    super(`no facilitator is available: ${errors.join('; ') || 'all circuits open'}`);
  }
}

/**
 * A settle call that failed without an answer (timeout, 5xx, connection cut after sending):
 * the transfer may or may not have happened, so it is resolved from the chain, never retried
 * blindly on another facilitator.
 */
export class SettlementIndeterminateError extends Error {
  constructor(
    readonly facilitator: string,
    cause: unknown,
  ) {
    super(`settlement via ${facilitator} ended without an answer: ${(cause as Error)?.message ?? cause}`, { cause });
  }
}

export interface PoolOptions {
  /** Consecutive failures that open a breaker. */
  failureThreshold?: number;
  /** How long an open breaker waits before its trial call. */
  halfOpenAfterMs?: number;
  /** The longest a trial call may take before it counts as failed (the facilitator timeout). */
  trialTimeoutMs?: number;
  log?: Pick<Logger, 'info' | 'warn'>;
}

const STATE_NAMES: Record<CircuitState, BreakerState> = {
  [CircuitState.Closed]: 'closed',
  [CircuitState.Open]: 'open',
  [CircuitState.HalfOpen]: 'half-open',
  [CircuitState.Isolated]: 'open',
};

/**
 * Facilitators in preference order, each behind a cockatiel circuit breaker. `verify` fails
 * over to the next facilitator when one errors (verifying moves no money). `settle` fails over
 * only when a breaker refused the call before anything was sent; an error after sending is
 * indeterminate and surfaces as `SettlementIndeterminateError`.
 *
 * Payments only go through closed breakers. cockatiel half-opens a breaker only when something
 * calls through it after `halfOpenAfterMs`, and with a healthy member further down the list no
 * payment ever would, so an open breaker would stay open for good; and a payment made the trial
 * would be a settlement risked on a facilitator that may still be down. So the pool runs each
 * trial itself, on a timer, with the member's `ping` (bounded by `trialTimeoutMs`): a success
 * closes the breaker, a failure opens it for another `halfOpenAfterMs` and schedules the next.
 */
export class FacilitatorPool {
  private readonly members: Member[];
  readonly halfOpenAfterMs: number;
  private readonly trialTimeoutMs: number;
  private closed = false;

  constructor(facilitators: Facilitator[], opts: PoolOptions = {}) {
    this.halfOpenAfterMs = opts.halfOpenAfterMs ?? 15_000;
    this.trialTimeoutMs = opts.trialTimeoutMs ?? 10_000;
    const log = opts.log;
    this.members = facilitators.map((facilitator) => {
      const breaker = circuitBreaker(handleAll, {
        halfOpenAfter: this.halfOpenAfterMs,
        breaker: new ConsecutiveBreaker(opts.failureThreshold ?? 3),
      });
      const status: FacilitatorStatus = {
        name: facilitator.name,
        kind: facilitator.kind,
        url: facilitator.url,
        state: 'closed',
        consecutiveFailures: 0,
        lastError: null,
        lastErrorAt: null,
        lastSuccessAt: null,
        openedAt: null,
      };
      const member: Member = { facilitator, breaker, status, openedAtMs: 0, trialTimer: undefined };
      breaker.onStateChange((s) => {
        status.state = STATE_NAMES[s];
        if (s === CircuitState.Open) {
          member.openedAtMs = Date.now();
          status.openedAt = new Date(member.openedAtMs).toISOString();
          log?.warn(
            { facilitator: facilitator.name, lastError: status.lastError, trialInMs: this.halfOpenAfterMs },
            'facilitator breaker open',
          );
          this.scheduleTrial(member, this.halfOpenAfterMs);
        }
        if (s === CircuitState.Closed) {
          status.openedAt = null;
          log?.info({ facilitator: facilitator.name }, 'facilitator breaker closed');
        }
      });
      breaker.onFailure(({ reason }) => {
        status.consecutiveFailures += 1;
        status.lastError =
          'error' in reason ? String((reason.error as Error)?.message ?? reason.error).slice(0, 300) : 'failed';
        status.lastErrorAt = new Date().toISOString();
      });
      breaker.onSuccess(() => {
        status.consecutiveFailures = 0;
        status.lastSuccessAt = new Date().toISOString();
      });
      return member;
    });
  }

  get size(): number {
    return this.members.length;
  }

  /** Stops the trial timers (shutdown). A trial already in flight ends within `trialTimeoutMs` and schedules nothing. */
  close(): void {
    this.closed = true;
    for (const m of this.members) {
      clearTimeout(m.trialTimer);
      m.trialTimer = undefined;
    }
  }

  /**
   * The facilitator that would take a settlement now (the first whose breaker is closed), if
   * its settle verifies by itself: then the paywall settles directly, without a separate verify.
   */
  settlerThatVerifies(): string | undefined {
    const next = this.members.find(takesPayments);
    return next?.facilitator.settleVerifies ? next.facilitator.name : undefined;
  }

  /** The cached breaker state of each facilitator (what this process has seen; no network). */
  snapshot(): FacilitatorStatus[] {
    return this.members.map((m) => ({ ...m.status, state: STATE_NAMES[m.breaker.state] }));
  }

  /** Probes every facilitator's `/supported` now, with a timeout; does not count towards breakers. */
  async probe(timeoutMs = 3000) {
    return Promise.all(
      this.members.map(async ({ facilitator }) => {
        const started = performance.now();
        try {
          const supported = await withTimeout(facilitator.supported(), timeoutMs, 'GET /supported');
          return {
            name: facilitator.name,
            kind: facilitator.kind,
            url: facilitator.url,
            ok: true,
            latencyMs: Math.round(performance.now() - started),
            kinds: supported.kinds.map((k) => ({ x402Version: k.x402Version, scheme: k.scheme, network: k.network })),
            error: null as string | null,
          };
        } catch (err) {
          return {
            name: facilitator.name,
            kind: facilitator.kind,
            url: facilitator.url,
            ok: false,
            latencyMs: Math.round(performance.now() - started),
            kinds: [],
            error: (err as Error).message.slice(0, 300),
          };
        }
      }),
    );
  }

  async verify(
    payload: PaymentPayload,
    requirements: PaymentRequirements,
  ): Promise<{ result: VerifyResponse; facilitator: string }> {
    const errors: string[] = [];
    for (const m of this.members) {
      if (!takesPayments(m)) {
        errors.push(`${m.facilitator.name}: circuit ${STATE_NAMES[m.breaker.state]}`);
        continue;
      }
      try {
        const result = await m.breaker.execute(() => m.facilitator.verify(payload, requirements));
        return { result, facilitator: m.facilitator.name };
      } catch (err) {
        errors.push(
          `${m.facilitator.name}: ${err instanceof BrokenCircuitError ? 'circuit open' : (err as Error).message}`,
        );
      }
    }
    throw new AllFacilitatorsUnavailableError(this.retryAfterSeconds(), errors);
  }

  /** Settles through `preferred` (the facilitator that verified) when it is available, else the next one. */
  async settle(
    payload: PaymentPayload,
    requirements: PaymentRequirements,
    preferred?: string,
  ): Promise<{ result: SettleResponse; facilitator: string }> {
    const ordered = preferred
      ? [
          ...this.members.filter((m) => m.facilitator.name === preferred),
          ...this.members.filter((m) => m.facilitator.name !== preferred),
        ]
      : this.members;
    const errors: string[] = [];
    for (const m of ordered) {
      if (!takesPayments(m)) {
        errors.push(`${m.facilitator.name}: circuit ${STATE_NAMES[m.breaker.state]}`);
        continue;
      }
      let sent = false;
      try {
        const result = await m.breaker.execute(() => {
          sent = true;
          return m.facilitator.settle(payload, requirements);
        });
        return { result, facilitator: m.facilitator.name };
      } catch (err) {
        if (!sent) {
          errors.push(`${m.facilitator.name}: circuit open`);
          continue;
        }
        throw new SettlementIndeterminateError(m.facilitator.name, err);
      }
    }
    throw new AllFacilitatorsUnavailableError(this.retryAfterSeconds(), errors);
  }

  private retryAfterSeconds(): number {
    return Math.max(1, Math.ceil(this.halfOpenAfterMs / 1000));
  }

  private scheduleTrial(m: Member, delayMs: number): void {
    clearTimeout(m.trialTimer);
    m.trialTimer = undefined;
    if (this.closed) return;
    // Unref'd: a pending trial never keeps a process alive that has nothing else to do.
    m.trialTimer = setTimeout(() => void this.trial(m), delayMs).unref();
  }

  /**
   * The half-open trial: `execute` on an open breaker whose delay has passed is what makes
   * cockatiel half-open it and count the outcome. Never throws; a failure re-opens the breaker,
   * whose state listener schedules the next trial.
   */
  private async trial(m: Member): Promise<void> {
    m.trialTimer = undefined;
    if (this.closed || m.breaker.state !== CircuitState.Open) return;
    try {
      await m.breaker.execute(() =>
        withTimeout(m.facilitator.ping(), this.trialTimeoutMs, `${m.facilitator.name}'s trial`),
      );
    } catch (err) {
      // A timer can fire a moment before cockatiel's Date.now() says the delay has passed, and
      // then the breaker refuses the call while staying open: try again when it is due.
      if (err instanceof BrokenCircuitError && m.breaker.state === CircuitState.Open) {
        this.scheduleTrial(m, Math.max(5, this.halfOpenAfterMs - (Date.now() - m.openedAtMs)));
      }
    }
  }
}

/**
 * Only a closed breaker takes payments. An open one waits for its trial; a half-open one has its
 * trial in flight, and cockatiel would hold a payment sent through it until the trial ends (up to
 * the trial timeout) instead of letting it go to the next facilitator now.
 */
function takesPayments(m: Member): boolean {
  return m.breaker.state === CircuitState.Closed;
}
