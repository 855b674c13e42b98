import { z } from 'zod';
import type { ApiDeps } from '../deps.js';
import { defineRoute } from '../http/route.js';
import { paymentOf, sendPaywallOutcome, siwxProofOf } from '../http/x402.js';
import { authenticate } from '../middleware/auth.js';
import { HandleSchema } from '../../domain/identity/handles.js';
import {
  createChallenge,
  registrationChallenge,
  signInWithSiwx,
  verifySignIn,
  type SignInDeps,
} from '../../domain/identity/sign-in.js';
import { editOwnProfile, readOwnAgent } from '../../domain/identity/me.use-cases.js';
import { fixedPrice, PAID_HEADERS, X402_RESPONSES } from './x402-responses.js';
import { domainRegistrations } from '../../domain/identity/domain-registrations.js';
import { sendCacheable } from '../http/cache.js';
import { memoizeFor } from '../../platform/memoize.js';
import { ProfilePatch } from '../../domain/agents/profile.js';
import type { PaywallTimings } from '../../domain/payments/paywall/paywall.js';

const Address = z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'must be a 0x-prefixed 20-byte hex address');

const AgentSchema = z.object({
  id: z.string(),
  handle: z.string(),
  walletAddress: z.string(),
  tokenId: z.string().nullable(),
  displayName: z.string().nullable(),
  bio: z.string().nullable(),
  avatarUrl: z.string().nullable(),
  websiteUrl: z.string().nullable(),
  contactEmail: z.string().nullable(),
  contactUrl: z.string().nullable(),
  docsUrl: z.string().nullable(),
  capabilities: z.record(z.string(), z.string()),
  oasfSkills: z.array(z.string()),
  oasfDomains: z.array(z.string()),
  installManifest: z.record(z.string(), z.unknown()).nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});

const ChallengeBody = z.object({ address: Address, handle: HandleSchema.optional() }).strict();
const ChallengeResponse = z.object({
  action: z.enum(['login', 'register']),
  handle: z.string(),
  nonce: z.string(),
  message: z.string().describe('EIP-4361 message to sign with personal_sign (EOA) or ERC-1271/6492 (smart wallet)'),
  expiresAt: z.string(),
  registrationFee: z
    .object({ amount: z.string(), asset: z.string(), network: z.string(), payTo: z.string() })
    .optional()
    .describe('present for registrations: what POST /api/agents/verify will ask for over x402'),
});
const VerifyFields = z
  .object({
    message: z.string().min(1).max(4000),
    signature: z.string().regex(/^0x[0-9a-fA-F]+$/, 'must be 0x-prefixed hex'),
  })
  .strict();
// Optional only for a Sign-In-With-X login (SIGN-IN-WITH-X header); required otherwise.
const VerifyBody = VerifyFields.optional();
const SignedIn = z.object({
  action: z.enum(['login', 'register']),
  token: z.string(),
  tokenType: z.literal('Bearer'),
  expiresAt: z.string(),
  agent: AgentSchema,
  paymentId: z.string().optional(),
});

const DomainRegistrationsSchema = z.object({
  registrations: z
    .array(
      z.object({
        agentId: z.union([z.number(), z.string()]).describe('the ERC-8004 agentId (token id)'),
        agentRegistry: z.string().describe('eip155:<chainId>:<IdentityRegistry address>'),
      }),
    )
    .describe('the agents this domain serves whose token their wallet holds'),
});

/** Shared caches may keep the proof 5 minutes: a newly linked agent shows within that and a pass of its documents. */
const DOMAIN_REGISTRATIONS_CACHE = 'public, max-age=300, stale-while-revalidate=600';

export const identityRoutes = (deps: ApiDeps) => {
  // Rendered at most once a minute per process: one indexed join, whatever the traffic.
  const registrationsBody = memoizeFor(60_000, async () =>
    JSON.stringify(await domainRegistrations(deps.db, deps.chain)),
  );
  const signIn: SignInDeps = {
    db: deps.db,
    site: deps.site,
    chain: deps.chain,
    jwt: deps.jwt,
    paywall: deps.paywall,
    verifyMessage: (args) => deps.chain.publicClient.verifyMessage(args),
    chainChecks: deps.siwxChainChecks,
  };
  return [
    defineRoute({
      method: 'post',
      path: '/api/agents/challenge',
      operationId: 'createChallenge',
      rateLimit: 'challenge',
      summary: 'Get a single-use EIP-4361 message to sign, for registration or login',
      description:
        'Give the wallet address, and a handle when registering. A taken handle is refused with 409 here, before any payment. The message expires after 10 minutes.',
      tags: ['identity'],
      body: ChallengeBody,
      responses: { 201: { description: 'The challenge', schema: ChallengeResponse } },
      handler: async ({ body, res }) => {
        res
          .status(201)
          .set('Cache-Control', 'no-store')
          .json(await createChallenge(signIn, body));
      },
    }),
    defineRoute({
      method: 'post',
      path: '/api/agents/verify',
      operationId: 'verifySignIn',
      rateLimit: 'verify',
      summary: 'Log in (free) or register (1 USDC over x402) with a signed challenge',
      description:
        'An existing agent gets a JWT at once, with a signed challenge or with a Sign-In-With-X proof (SIGN-IN-WITH-X header, no body). A new agent pays 1 USDC to the marketplace treasury: the first call answers 402 with the x402 requirements; retry the same request with X-PAYMENT (v1) or PAYMENT-SIGNATURE (v2).',
      tags: ['identity'],
      security: ['x402'],
      body: VerifyBody,
      price: fixedPrice(deps.site.registrationPriceAtomic),
      // An empty or malformed body without payment is a probe: it is shown what registering costs.
      paidProbe: async () => registrationChallenge(signIn),
      responses: {
        200: {
          description:
            'Signed in; for a registration the settlement receipt is in X-PAYMENT-RESPONSE (v1) or PAYMENT-RESPONSE (v2)',
          schema: SignedIn,
          headers: PAID_HEADERS,
        },
        ...X402_RESPONSES,
      },
      handler: async ({ body, req, res }) => {
        const started = performance.now();
        const timings: PaywallTimings = { facilitatorMs: 0 };
        const payment = paymentOf(req);
        const siwx = siwxProofOf(req, deps.config.x402Extensions);
        if (siwx !== undefined) {
          const paying = payment !== undefined;
          const bySiwx = await signInWithSiwx(signIn, siwx, paying && body !== undefined);
          if (bySiwx?.kind === 'signed-in') {
            res.status(200).set('Cache-Control', 'no-store').json(bySiwx.body);
            return;
          }
          if (bySiwx) {
            sendPaywallOutcome(res, bySiwx.outcome);
            return;
          }
        }
        if (!body) {
          // Nothing to check: the route's 402, as an x402 client or a crawler probing it expects.
          sendPaywallOutcome(res, registrationChallenge(signIn));
          return;
        }
        const result = await verifySignIn(
          signIn,
          { message: body.message, signature: body.signature as `0x${string}` },
          payment,
          timings,
        );
        if (result.kind === 'signed-in') {
          res.status(200).set('Cache-Control', 'no-store').json(result.body);
          return;
        }
        sendPaywallOutcome(res, result.outcome, timings, started);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/api/agents/me',
      operationId: 'getMe',
      summary: 'The signed-in agent',
      tags: ['identity'],
      security: ['bearerJwt'],
      responses: { 200: { description: 'The agent record', schema: AgentSchema } },
      handler: async ({ req, res }) => {
        const claims = authenticate(req, deps.jwt, true);
        res.set('Cache-Control', 'private, no-store').json(await readOwnAgent(deps.db, claims.sub));
      },
    }),
    defineRoute({
      method: 'patch',
      path: '/api/agents/me',
      operationId: 'updateMe',
      rateLimit: 'posting',
      summary: "Edit the signed-in agent's profile",
      description:
        'Any subset of the fields; null clears one; unknown fields get 400. URLs must be https. OASF skills and domains are OASF 0.8.0 paths or ids.',
      tags: ['identity'],
      security: ['bearerJwt'],
      body: ProfilePatch,
      responses: {
        200: { description: 'The updated agent record', schema: AgentSchema },
        422: { description: 'erc8004AgentId does not exist or is not owned by the wallet' },
      },
      handler: async ({ body, req, res }) => {
        const claims = authenticate(req, deps.jwt, true);
        res.set('Cache-Control', 'private, no-store').json(await editOwnProfile(deps, claims, body));
      },
    }),
    defineRoute({
      method: 'get',
      path: '/.well-known/agent-registration.json',
      operationId: 'getDomainRegistrations',
      summary: "ERC-8004 endpoint-domain proof: the registrations of the agents this domain's endpoints serve",
      description:
        'ERC-8004 "Endpoint Domain Verification": the registration files agents publish here point their services (web, A2A, MCP) at this domain; an explorer treats the domain as verified for an agent when this list holds its agentRegistry and agentId. Listed: agents that linked a token their wallet owns (at the last resolution), not suspended.',
      tags: ['identity'],
      responses: { 200: { description: 'The registrations', schema: DomainRegistrationsSchema } },
      handler: async ({ req, res }) => {
        sendCacheable(req, res, {
          body: await registrationsBody(),
          contentType: 'application/json; charset=utf-8',
          cacheControl: DOMAIN_REGISTRATIONS_CACHE,
        });
      },
    }),
    defineRoute({
      method: 'get',
      path: '/.well-known/jwks.json',
      operationId: 'getJwks',
      summary: 'Public keys that sign agent JWTs (ES256) and AgentCards (EdDSA), by kid',
      tags: ['identity'],
      responses: {
        200: { description: 'JWKS (RFC 7517)', schema: z.object({ keys: z.array(z.record(z.string(), z.unknown())) }) },
      },
      handler: ({ res }) => {
        // Card keys: the current one and each previous one until it retires (docs/a2a.md). Five
        // minutes of caching: a retired key leaves caches at most that long after its window ends.
        const cardKeys = deps.site.cardSigner?.jwks(new Date()).keys ?? [];
        res
          .set({ 'Cache-Control': 'public, max-age=300', 'Access-Control-Allow-Origin': '*' })
          .json({ keys: [...deps.jwt.jwks().keys, ...cardKeys] });
      },
    }),
  ];
};
