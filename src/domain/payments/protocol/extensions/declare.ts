import { randomBytes } from 'node:crypto';
import { OFFER_RECEIPT } from '@x402/extensions/offer-receipt';
import { declarePaymentIdentifierExtension, PAYMENT_IDENTIFIER } from '@x402/extensions/payment-identifier';
import { declareSIWxExtension, SIGN_IN_WITH_X, type SIWxExtension } from '@x402/extensions/sign-in-with-x';
import type { ResourceListing } from './bazaar.js';

/** How long a Sign-In-With-X challenge stays valid, and the oldest `issuedAt` we accept. */
export const SIWX_TTL_SECONDS = 300;

/** What a 402 states beside the payment requirements: the listing and the x402 extensions of the route. */
export interface ChallengeExtensions {
  resource: { serviceName?: string; tags?: string[]; iconUrl?: string };
  extensions: Record<string, unknown>;
}

/** What the extensions of one resource are built from. */
export interface ExtensionsInput {
  resourceUrl: string;
  chainId: number;
  listing?: ResourceListing;
  /** The key id of the receipt signer, published with the offer-receipt declaration. */
  receiptKid?: string;
}

/**
 * The extensions every paid route declares in its 402: `bazaar` (how to call it, from its
 * listing), `sign-in-with-x` (a fresh single-use challenge bound to this host and resource, for
 * wallets that bought before), `payment-identifier` (optional idempotency key) and
 * `offer-receipt` (settlements carry a signed receipt).
 */
export function challengeExtensions(input: ExtensionsInput): ChallengeExtensions {
  const { listing } = input;
  const extensions: Record<string, unknown> = {};
  if (listing) extensions.bazaar = listing.bazaar;
  extensions[SIGN_IN_WITH_X] = siwxDeclaration(input.resourceUrl, input.chainId);
  extensions[PAYMENT_IDENTIFIER] = declarePaymentIdentifierExtension(false);
  extensions[OFFER_RECEIPT] = {
    info: {
      offers: [],
      receipts: { format: 'eip712', includeTxHash: true, ...(input.receiptKid ? { kid: input.receiptKid } : {}) },
    },
  };
  return {
    resource: {
      ...(listing?.serviceName ? { serviceName: listing.serviceName } : {}),
      ...(listing?.tags ? { tags: listing.tags } : {}),
      ...(listing?.iconUrl ? { iconUrl: listing.iconUrl } : {}),
    },
    extensions,
  };
}

/** A Sign-In-With-X challenge for one resource: our host, the resource URL, a fresh nonce, five minutes. */
function siwxDeclaration(resourceUrl: string, chainId: number): SIWxExtension {
  const declared = declareSIWxExtension({
    statement: 'Sign in to read again what this wallet bought',
    network: `eip155:${chainId}`,
    expirationSeconds: SIWX_TTL_SECONDS,
  })[SIGN_IN_WITH_X];
  if (!declared) throw new Error('declareSIWxExtension declared nothing');
  const issuedAt = new Date();
  return {
    info: {
      ...declared.info,
      domain: new URL(resourceUrl).host,
      uri: resourceUrl,
      nonce: randomBytes(16).toString('hex'),
      issuedAt: issuedAt.toISOString(),
      expirationTime: new Date(issuedAt.getTime() + SIWX_TTL_SECONDS * 1000).toISOString(),
    },
    supportedChains: declared.supportedChains,
    schema: declared.schema,
  };
}
