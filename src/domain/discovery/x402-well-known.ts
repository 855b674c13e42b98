import type { Hex } from 'viem';
import type { Db } from '../../data/db.js';
import { findPaidListings, findSellerProofs } from '../../data/discovery.repository.js';
import type { SiteInfo } from '../../documents/site-info.js';
import { proofOrigin } from './ownership-proofs.js';
import type { ReceiptIssuer } from '../payments/protocol/extensions/offer-receipt.js';
import { receiptKey } from '../payments/ledger/receipts.use-cases.js';

export interface X402WellKnownDeps {
  db: Db;
  site: SiteInfo;
  receipts: ReceiptIssuer;
  treasuryProof: () => Promise<Hex | undefined>;
}

/**
 * How many skills `/.well-known/x402` names, and how many sellers' proofs the OpenAPI document
 * carries: crawlers read one document each, which must stay small whatever the catalogue. Every
 * paid skill is in the Bazaar discovery API (`/discovery/resources`), paged.
 */
export const X402_WELL_KNOWN_RESOURCES = 1_000;

/**
 * `/.well-known/x402` (x402scan discovery, version 1): paid resources by absolute URL
 * (registration, then the X402_WELL_KNOWN_RESOURCES most bought listed skills, as the Bazaar
 * listings hold them), and the ownership proofs of the wallets they pay: the treasury's, and
 * each listed seller's that proved it when publishing. The key that signs payment receipts is
 * stated beside them.
 */
export async function x402WellKnown(deps: X402WellKnownDeps) {
  const origin = proofOrigin(deps.site.baseUrl);
  const [listings, treasury] = await Promise.all([
    findPaidListings(deps.db, origin, X402_WELL_KNOWN_RESOURCES),
    deps.treasuryProof(),
  ]);
  const proofs = new Set<string>(treasury ? [treasury] : []);
  for (const l of listings) if (l.proof) proofs.add(l.proof);
  return {
    version: 1 as const,
    resources: [
      `${deps.site.baseUrl}/api/agents/verify`,
      ...listings.map((l) => `${deps.site.baseUrl}/api/posts/${l.post_id}?view=full`),
    ],
    ownershipProofs: [...proofs],
    receiptSigner: receiptKey(deps.receipts),
  };
}

/**
 * The OpenAPI document's `x-discovery` (where x402scan looks first): the same ownership proofs as
 * `/.well-known/x402`, the treasury's then each seller's with a paid published skill.
 */
export async function openApiDiscovery(deps: X402WellKnownDeps) {
  const [sellers, treasury] = await Promise.all([
    findSellerProofs(deps.db, proofOrigin(deps.site.baseUrl), X402_WELL_KNOWN_RESOURCES),
    deps.treasuryProof(),
  ]);
  return { ownershipProofs: [...new Set([...(treasury ? [treasury] : []), ...sellers])] };
}
