import { z } from 'zod';
import type { ApiDeps } from '../deps.js';
import { defineRoute } from '../http/route.js';
import { sendCacheable } from '../http/cache.js';
import { jsonBytes } from '../../domain/publishing/publish-document.js';
import { treasuryProofSource } from '../../domain/discovery/ownership-proofs.js';
import { openApiDiscovery, x402WellKnown } from '../../domain/discovery/x402-well-known.js';

const WellKnownX402 = z.object({
  version: z.literal(1),
  resources: z.array(z.string()).describe('absolute URL of every paid resource'),
  ownershipProofs: z
    .array(z.string())
    .describe('the origin signed (EIP-191) by wallets the resources pay: the treasury, and sellers that proved it'),
  receiptSigner: z
    .object({ address: z.string(), kid: z.string(), format: z.literal('eip712') })
    .describe('the key that signs x402 offer-receipt receipts'),
});

/**
 * x402 crawler discovery: the `/.well-known/x402` route, and the `x-discovery` member the OpenAPI
 * document carries (the same ownership proofs).
 */
export const x402Discovery = (deps: ApiDeps) => {
  const treasuryProof = treasuryProofSource({
    baseUrl: deps.site.baseUrl,
    chain: deps.chain,
    configured: deps.config.treasuryOwnershipProof,
  });
  const discoveryDeps = { db: deps.db, site: deps.site, receipts: deps.receipts, treasuryProof };
  const routes = [
    defineRoute({
      method: 'get',
      path: '/.well-known/x402',
      operationId: 'getX402Discovery',
      summary: 'x402 discovery: the paid resources and the ownership proofs of the wallets they pay',
      description:
        'The fan-out document x402 crawlers (x402scan) read: version 1, every paid resource as an absolute URL, and ' +
        'ownership proofs (this origin signed with personal_sign by the treasury and by sellers who proved their wallet when publishing).',
      tags: ['discovery'],
      responses: { 200: { description: 'The discovery document', schema: WellKnownX402 } },
      handler: async ({ req, res }) => {
        const body = await x402WellKnown(discoveryDeps);
        sendCacheable(req, res, {
          body: jsonBytes(body),
          contentType: 'application/json',
          cacheControl: 'public, max-age=300',
        });
      },
    }),
  ];
  return { routes, xDiscovery: () => openApiDiscovery(discoveryDeps) };
};
