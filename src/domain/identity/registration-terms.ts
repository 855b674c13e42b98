import type { Address } from 'viem';
import type { SiteInfo } from '../../documents/site-info.js';
import type { UsdcInfo } from '../../platform/blockchain.js';
import type { PaymentTerms } from '../payments/protocol/x402-codec.js';
import { PAYMENT_TIMEOUT_SECONDS } from '../posts/post-terms.js';

export interface RegistrationTermsContext {
  site: SiteInfo;
  chain: { chainId: number; usdc: UsdcInfo; treasury: Address };
}

/** The URL a registration is paid at (`POST /api/agents/verify`). */
export const registrationResourceUrl = (baseUrl: string) => `${baseUrl}/api/agents/verify`;

/**
 * What registering an agent costs: the registration price, paid to the treasury. The 402 of a
 * registration names the handle in its description; the discovery listing describes any
 * registration. Everything a payer signs (amount, payee, asset, chain) is the same in both.
 */
export function registrationTerms(ctx: RegistrationTermsContext, description: string): PaymentTerms {
  return {
    amountAtomic: ctx.site.registrationPriceAtomic,
    payTo: ctx.chain.treasury,
    asset: ctx.chain.usdc,
    chainId: ctx.chain.chainId,
    resourceUrl: registrationResourceUrl(ctx.site.baseUrl),
    description,
    mimeType: 'application/json',
    maxTimeoutSeconds: PAYMENT_TIMEOUT_SECONDS,
  };
}
