import { randomBytes } from 'node:crypto';
import { getAddress, type Address, type Hex, type PublicClient } from 'viem';
import { createSiweMessage, parseSiweMessage, verifySiweMessage } from 'viem/siwe';
import type { Db } from '../../data/db.js';
import {
  consumeChallenge,
  findAgentByHandle,
  findAgentById,
  findAgentByWallet,
  findAgentsHoldingHandleOrWallet,
  findChallenge,
  insertChallenge,
  insertRegisteredAgent,
} from '../../data/agents.repository.js';
import type { Agent, Payment } from '../../data/schema.js';
import type { SiteInfo } from '../../documents/site-info.js';
import type { UsdcInfo } from '../../platform/blockchain.js';
import { ConflictError, UnauthorizedError, ValidationError } from '../../platform/errors.js';
import { registrationListing } from '../payments/protocol/extensions/bazaar.js';
import type { PaidResource, Paywall, PaywallOutcome, PaywallTimings } from '../payments/paywall/paywall.js';
import { checkSiwx, consumeSiwx, type SiwxDeps, type SiwxProof } from '../payments/paywall/sign-in-with-x.js';
import type { SentPayment } from '../payments/protocol/x402-codec.js';
import type { SettlementEffect } from '../payments/ledger/settlement.js';
import { agentView } from './agent-view.js';
import { registrationTerms } from './registration-terms.js';
import type { JwtKeys } from './jwt.js';

export const CHALLENGE_TTL_SECONDS = 600;

export interface SignInDeps {
  db: Db;
  site: SiteInfo;
  chain: { chainId: number; usdc: UsdcInfo; treasury: Address; publicClient: PublicClient };
  jwt: JwtKeys;
  paywall: Paywall;
  /** Checks Sign-In-With-X proofs: the chain's signature verifier (smart wallets included). */
  verifyMessage: SiwxDeps['verifyMessage'];
  chainChecks: SiwxDeps['chainChecks'];
}

/**
 * Step 1 of sign-in: a single-use EIP-4361 message bound to this service's domain and chain,
 * with a nonce that expires. With a handle it is a registration (refused with 409 at once if the
 * handle is taken, before any money could move); for a registered wallet it is a login.
 */
export async function createChallenge(deps: SignInDeps, input: { address: string; handle?: string }) {
  const address = getAddress(input.address);
  const existing = await findAgentByWallet(deps.db, address);
  const action = existing ? 'login' : 'register';
  const handle = existing?.handle ?? (await registrableHandle(deps.db, input.handle));
  const url = new URL(deps.site.baseUrl);
  const nonce = randomBytes(16).toString('hex');
  const issuedAt = new Date();
  const expirationTime = new Date(issuedAt.getTime() + CHALLENGE_TTL_SECONDS * 1000);
  const message = createSiweMessage({
    address,
    chainId: deps.chain.chainId,
    domain: url.host,
    uri: deps.site.baseUrl,
    version: '1',
    nonce,
    issuedAt,
    expirationTime,
    statement: action === 'login' ? `Sign in to Skill Market as @${handle}.` : `Register @${handle} on Skill Market.`,
  });
  await insertChallenge(deps.db, {
    nonce,
    address: address.toLowerCase(),
    handle,
    message,
    issuedAt,
    expiresAt: expirationTime,
  });
  return {
    action,
    handle,
    nonce,
    message,
    expiresAt: expirationTime.toISOString(),
    ...(action === 'register'
      ? {
          registrationFee: {
            amount: deps.site.registrationPriceAtomic.toString(),
            asset: deps.chain.usdc.address,
            network: deps.site.network,
            payTo: deps.chain.treasury,
          },
        }
      : {}),
  };
}

/** The handle a new wallet asked for: required, and refused at once when another agent holds it. */
async function registrableHandle(db: Db, handle: string | undefined): Promise<string> {
  if (!handle) {
    throw new ValidationError('This wallet has no agent yet: give the handle to register', [
      { name: 'handle', in: 'body', reason: 'is required to register a new agent' },
    ]);
  }
  if (await findAgentByHandle(db, handle)) throw new ConflictError(`The handle "${handle}" is taken`, 'handle_taken');
  return handle;
}

export type SignInResult =
  | { kind: 'signed-in'; body: ReturnType<typeof signedInBody> }
  | { kind: 'paywall'; outcome: PaywallOutcome };

function signedInBody(deps: SignInDeps, agent: Agent, action: 'login' | 'register', paymentId?: string) {
  const issued = deps.jwt.sign({ sub: agent.id, handle: agent.handle, wallet: getAddress(agent.wallet_address) });
  return {
    action,
    token: issued.token,
    tokenType: 'Bearer' as const,
    expiresAt: issued.expiresAt,
    agent: agentView(agent),
    ...(paymentId ? { paymentId } : {}),
  };
}

/**
 * Step 2: checks the signed challenge (plain and smart-contract wallets, through the chain),
 * then logs an existing agent in, or registers a new one behind a 1 USDC x402 payment to the
 * treasury. A replay of a paid registration request gets the same answer without a second charge.
 */
export async function verifySignIn(
  deps: SignInDeps,
  input: { message: string; signature: Hex },
  payment: SentPayment | undefined,
  timings?: PaywallTimings,
): Promise<SignInResult> {
  const fields = parseSiweMessage(input.message);
  if (!fields.nonce || !fields.address)
    throw new UnauthorizedError('The message is not an EIP-4361 sign-in message', 'challenge_invalid');
  const challenge = await findChallenge(deps.db, fields.nonce);
  if (!challenge || challenge.message !== input.message)
    throw new UnauthorizedError('Unknown challenge: request one from /api/agents/challenge', 'challenge_unknown');
  if (new Date(challenge.expires_at).getTime() < Date.now())
    throw new UnauthorizedError('The challenge has expired: request a new one', 'challenge_expired');
  const valid = await verifySiweMessage(deps.chain.publicClient, {
    message: input.message,
    signature: input.signature,
    domain: new URL(deps.site.baseUrl).host,
    nonce: challenge.nonce,
    address: getAddress(challenge.address),
  }).catch(() => false);
  if (!valid)
    throw new UnauthorizedError('The signature does not match the challenge and address', 'invalid_signature');

  const wallet = getAddress(challenge.address);
  // Every challenge is issued with the handle it registers or logs in.
  const handle = challenge.handle;
  if (handle === null) throw new Error(`challenge ${challenge.nonce} was stored without a handle`);
  const registration = registrationResource(deps, handle, wallet);

  // A retry of a paid registration (the same payment again, or twenty at once) is the
  // same payment: the paywall gives every copy the first one's answer.
  const prior = await deps.paywall.recordedPayment(payment, deps.chain.chainId, deps.chain.usdc.address);
  if (prior && prior.purpose === 'registration' && prior.registration_wallet === wallet.toLowerCase()) {
    return { kind: 'paywall', outcome: await deps.paywall.process(payment, registration, timings) };
  }
  if (challenge.used_at)
    throw new UnauthorizedError('This challenge was already used: request a new one', 'challenge_used');

  const existing = await findAgentByWallet(deps.db, wallet);
  if (existing) {
    if (!(await consumeChallenge(deps.db, challenge.nonce, new Date())))
      throw new UnauthorizedError('This challenge was already used', 'challenge_used');
    return { kind: 'signed-in', body: signedInBody(deps, existing, 'login') };
  }
  if (await findAgentByHandle(deps.db, handle))
    throw new ConflictError(`The handle "${handle}" is taken`, 'handle_taken');
  const outcome = await deps.paywall.process(payment, registration, timings);
  if (outcome.kind === 'paid') await consumeChallenge(deps.db, challenge.nonce, new Date(), outcome.payment.id);
  return { kind: 'paywall', outcome };
}

/** A registration behind the paywall: 1 USDC to the treasury for this handle and wallet. */
function registrationResource(d: SignInDeps, handle: string, registrant: Address): PaidResource<void> {
  return {
    purpose: 'registration' as const,
    terms: registrationTerms(d, `Register the agent @${handle} on Skill Market`),
    registration: { handle, wallet: registrant },
    listing: () => registrationListing({ action: 'register', handle }),
    // The claim now holds the in-flight handle and wallet; a registration that completed since
    // the first check (another wallet's, for this handle) is caught here, before money moves.
    prepare: async (payment: Payment) => {
      const taken = await findAgentsHoldingHandleOrWallet(d.db, handle, registrant);
      const other = taken.find((a) => a.registration_payment_id !== payment.id);
      if (other) {
        throw other.handle === handle
          ? new ConflictError(`The handle "${handle}" is taken`, 'handle_taken')
          : new ConflictError('This wallet already has an agent: log in instead', 'wallet_registered');
      }
    },
    // The request's SIWE signature proves its wallet: the registrant may ask again, nobody else.
    mayRedeliver: (payment: Payment) => payment.registration_wallet === registrant.toLowerCase(),
    // A token only for the wallet and handle this request signed in with, whatever payment it carries.
    render: async (payment: Payment) => {
      if (payment.registration_wallet !== registrant.toLowerCase() || payment.registration_handle !== handle)
        throw new ConflictError('This payment registered another agent', 'payment_already_used');
      const agent = payment.agent_id === null ? undefined : await findAgentById(d.db, payment.agent_id);
      if (!agent) throw new Error(`the registration paid by ${payment.id} has no agent`);
      return signedInBody(d, agent, 'register', payment.id);
    },
  };
}

/**
 * Sign-in with a SIGN-IN-WITH-X proof instead of a signed challenge: a wallet that has an agent
 * gets its JWT, no body needed; the proof's nonce is spent. A proof that is refused (replayed,
 * for another host, resource or chain, expired, badly signed, or from a wallet without an agent)
 * answers 402 with the registration's challenge and the reason; one that cannot be read, 400.
 * With `fallBack` (the request also carries a payment and a signed challenge) a failed proof
 * returns undefined and the request goes on as a registration.
 */
export async function signInWithSiwx(
  deps: SignInDeps,
  header: SiwxProof,
  fallBack: boolean,
): Promise<SignInResult | undefined> {
  const siwx = {
    db: deps.db,
    chainId: deps.chain.chainId,
    verifyMessage: deps.verifyMessage,
    chainChecks: deps.chainChecks,
  };
  const proof = await checkSiwx(siwx, header, `${deps.site.baseUrl}/api/agents/verify`);
  let refusal: { code: string; detail: string };
  if (proof.kind === 'proved') {
    const agent = await findAgentByWallet(deps.db, proof.address);
    const spent = agent ? await consumeSiwx(deps.db, proof) : undefined;
    if (agent && !spent) return { kind: 'signed-in', body: signedInBody(deps, agent, 'login') };
    refusal = spent ?? { code: 'siwx_no_agent', detail: `The wallet ${proof.address} has no agent: register it first` };
  } else if (proof.kind === 'malformed') {
    if (fallBack) return undefined;
    throw proof.error;
  } else refusal = proof;
  if (fallBack) return undefined;
  return { kind: 'paywall', outcome: deps.paywall.refusal(anyRegistration(deps), refusal.code, refusal.detail) };
}

/**
 * The 402 of `POST /api/agents/verify` for a request that carries neither a signed challenge nor
 * a proof: what registering costs, how to call the route, and the Sign-In-With-X challenge an
 * existing agent's wallet can answer instead.
 */
export function registrationChallenge(deps: SignInDeps): PaywallOutcome {
  return deps.paywall.challenge(anyRegistration(deps));
}

/** The registration route as a paid resource, before a handle is known: only ever answered with 402. */
function anyRegistration(deps: SignInDeps): PaidResource<void> {
  return {
    purpose: 'registration',
    terms: registrationTerms(deps, 'Register an agent on Skill Market'),
    listing: () => registrationListing({ action: 'register', handle: 'your-handle' }),
    prepare: async () => {
      throw new Error('a registration without a handle is never paid');
    },
    render: async () => undefined,
  };
}

/** A settled registration creates its agent in the same transaction that marks the payment settled. */
export const registrationEffect: SettlementEffect = async (trx, payment) => {
  const { registration_handle: handle, registration_wallet: wallet } = payment;
  if (handle === null || wallet === null)
    throw new Error(`payment ${payment.id} is settled as a registration without a handle or a wallet`);
  return { agentId: await insertRegisteredAgent(trx, { handle, wallet, paymentId: payment.id }) };
};
