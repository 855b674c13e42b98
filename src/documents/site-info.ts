import type { CardSigner } from './card-signature.js';

/** What the service knows about itself; documents render links and payment terms from it. */
export interface SiteInfo {
  baseUrl: string;
  apiVersion: string;
  /** CAIP-2 id of the chain payments settle on, e.g. eip155:84532. */
  network: string;
  usdcAddress: string;
  registrationPriceAtomic: bigint;
  /** Signs every published AgentCard; rendering a card without it fails (CardUnsignedError). */
  cardSigner?: CardSigner;
}
