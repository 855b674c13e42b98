import { randomBytes } from 'node:crypto';
import { getAddress, type Address, type Hex, type PublicClient } from 'viem';
import { createSiweMessage, parseSiweMessage, verifySiweMessage } from 'viem/siwe';
import type { Db } from '../../data/db.js';
import type { Agent, Payment } from '../../data/schema.js';
import type { SiteInfo } from '../../documents/site-info.js';
import type { UsdcInfo } from '../../platform/blockchain.js';
import { ConflictError, UnauthorizedError, ValidationError } from '../../platform/errors.js';
import type { Paywall, PaywallOutcome, PaywallTimings } from '../payments/paywall.js';
import type { SettlementEffect } from '../payments/settlement.js';
import type { JwtKeys } from './jwt.js';

export const CHALLENGE_TTL_SECONDS = 600;

export interface SignInDeps {
  db: Db;
  site: SiteInfo;
  chain: { chainId: number; usdc: UsdcInfo; treasury: Address; publicClient: PublicClient };
  jwt: JwtKeys;
  paywall: Paywall;
}

/** The agent record as the API returns it. */
export function agentView(a: Agent) {
  return {
    id: a.id,
    handle: a.handle,
    walletAddress: getAddress(a.wallet_address),
    tokenId: a.token_id,
    displayName: a.display_name,
    bio: a.bio,
    avatarUrl: a.avatar_url,
    websiteUrl: a.website_url,
    contactEmail: a.contact_email,
    contactUrl: a.contact_url,
    docsUrl: a.docs_url,
    capabilities: a.capabilities,
    oasfSkills: a.oasf_skills,
    oasfDomains: a.oasf_domains,
    installManifest: a.install_manifest,
    createdAt: a.created_at.toISOString(),
    updatedAt: a.updated_at.toISOString(),
  };
}

const findAgentByWallet = (db: Db, wallet: string) =>
  db.selectFrom('agents').selectAll().where('wallet_address', '=', wallet.toLowerCase()).executeTakeFirst();
const findAgentByHandle = (db: Db, handle: string) =>
  db.selectFrom('agents').selectAll().where('handle', '=', handle).executeTakeFirst();

/**
 * Step 1 of sign-in: a single-use EIP-4361 message bound to this service's domain and chain,
 * with a nonce that expires. With a handle it is a registration (refused with 409 at once if the
 * handle is taken, before any money could move); for a registered wallet it is a login.
 */
export async function createChallenge(deps: SignInDeps, input: { address: string; handle?: string }) {
  const address = getAddress(input.address);
  const existing = await findAgentByWallet(deps.db, address);
  const action = existing ? 'login' : 'register';
  if (!existing) {
    if (!input.handle) {
      throw new ValidationError('This wallet has no agent yet: give the handle to register', [
        { name: 'handle', in: 'body', reason: 'is required to register a new agent' },
      ]);
    }
    if (await findAgentByHandle(deps.db, input.handle))
      throw new ConflictError(`The handle "${input.handle}" is taken`, 'handle_taken');
  }
  const url = new URL(deps.site.baseUrl);
  const nonce = randomBytes(16).toString('hex');
  const issuedAt = new Date();
  const expirationTime = new Date(issuedAt.getTime() + CHALLENGE_TTL_SECONDS * 1000);
  const handle = existing?.handle ?? input.handle!;
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
  await deps.db
    .insertInto('auth_challenges')
    .values({ nonce, address: address.toLowerCase(), handle, message, issued_at: issuedAt, expires_at: expirationTime })
    .execute();
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
  paymentHeaders: { v1?: string; v2?: string },
  timings?: PaywallTimings,
): Promise<SignInResult> {
  const fields = parseSiweMessage(input.message);
  if (!fields.nonce || !fields.address)
    throw new UnauthorizedError('The message is not an EIP-4361 sign-in message', 'challenge_invalid');
  const challenge = await deps.db
    .selectFrom('auth_challenges')
    .selectAll()
    .where('nonce', '=', fields.nonce)
    .executeTakeFirst();
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
  const registration = registrationResource(deps, challenge.handle!, wallet);

  // A retry of a paid registration (the same payment header again, or twenty at once) is the
  // same payment: the paywall gives every copy the first one's answer.
  const prior = await deps.paywall.recordedPayment(paymentHeaders, deps.chain.chainId, deps.chain.usdc.address);
  if (prior && prior.purpose === 'registration' && prior.registration_wallet === wallet.toLowerCase()) {
    return { kind: 'paywall', outcome: await deps.paywall.process(paymentHeaders, registration, timings) };
  }
  if (challenge.used_at)
    throw new UnauthorizedError('This challenge was already used: request a new one', 'challenge_used');

  const existing = await findAgentByWallet(deps.db, wallet);
  if (existing) {
    if (!(await consumeChallenge(deps.db, challenge.nonce)))
      throw new UnauthorizedError('This challenge was already used', 'challenge_used');
    return { kind: 'signed-in', body: signedInBody(deps, existing, 'login') };
  }
  if (await findAgentByHandle(deps.db, challenge.handle!))
    throw new ConflictError(`The handle "${challenge.handle}" is taken`, 'handle_taken');
  const outcome = await deps.paywall.process(paymentHeaders, registration, timings);
  if (outcome.kind === 'paid') await consumeChallenge(deps.db, challenge.nonce, outcome.payment.id);
  return { kind: 'paywall', outcome };

  function registrationResource(d: SignInDeps, handle: string, registrant: Address) {
    return {
      purpose: 'registration' as const,
      terms: {
        amountAtomic: d.site.registrationPriceAtomic,
        payTo: d.chain.treasury,
        asset: d.chain.usdc,
        chainId: d.chain.chainId,
        resourceUrl: `${d.site.baseUrl}/api/agents/verify`,
        description: `Register the agent @${handle} on Skill Market`,
        mimeType: 'application/json',
        maxTimeoutSeconds: 300,
      },
      registration: { handle, wallet: registrant },
      // The claim now holds the in-flight handle and wallet; a registration that completed since
      // the first check (another wallet's, for this handle) is caught here, before money moves.
      prepare: async (payment: Payment) => {
        const taken = await d.db
          .selectFrom('agents')
          .select(['handle', 'wallet_address', 'registration_payment_id'])
          .where((eb) => eb.or([eb('handle', '=', handle), eb('wallet_address', '=', registrant.toLowerCase())]))
          .execute();
        const other = taken.find((a) => a.registration_payment_id !== payment.id);
        if (other) {
          throw other.handle === handle
            ? new ConflictError(`The handle "${handle}" is taken`, 'handle_taken')
            : new ConflictError('This wallet already has an agent: log in instead', 'wallet_registered');
        }
      },
      // The request's SIWE signature proves its wallet: the registrant may ask again, nobody else.
      mayRedeliver: (payment: Payment) => payment.registration_wallet === registrant.toLowerCase(),
      render: async (payment: Payment) => {
        const agent = await d.db
          .selectFrom('agents')
          .selectAll()
          .where('id', '=', payment.agent_id!)
          .executeTakeFirstOrThrow();
        return signedInBody(d, agent, 'register', payment.id);
      },
    };
  }
}

async function consumeChallenge(db: Db, nonce: string, paymentId?: string): Promise<boolean> {
  const row = await db
    .updateTable('auth_challenges')
    .set({ used_at: new Date(), payment_id: paymentId ?? null })
    .where('nonce', '=', nonce)
    .where('used_at', 'is', null)
    .returning('nonce')
    .executeTakeFirst();
  return Boolean(row);
}

/** A settled registration creates its agent in the same transaction that marks the payment settled. */
export const registrationEffect: SettlementEffect = async (trx, payment) => {
  const agent = await trx
    .insertInto('agents')
    .values({
      handle: payment.registration_handle!,
      wallet_address: payment.registration_wallet!,
      registration_payment_id: payment.id,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  await trx
    .insertInto('domain_events')
    .values({ type: 'agent.registered', agent_id: agent.id, payload: JSON.stringify({ paymentId: payment.id }) })
    .execute();
  return { agentId: agent.id };
};
