import type { Agent } from '../data/schema.js';
import { CardKeys } from '../platform/card-keys.js';
import type { SiteInfo } from './site-info.js';

/**
 * The key the catalogue's example cards are signed with. Public on purpose (it is in the
 * repository): no running service signs with it, and no JWKS lists it.
 */
const EXAMPLE_CARD_KEY = `-----BEGIN PRIVATE KEY-----
MC4CAQAwBQYDK2VwBCIEIHZ3ZqJsAStw7XXtUbVta49Du2Gs1CbFOCneiw4bcKRx
-----END PRIVATE KEY-----`;

/** The site the catalogue's examples are rendered for. */
export const EXAMPLE_SITE: SiteInfo = {
  baseUrl: 'https://market.example',
  apiVersion: '1.0.0',
  network: 'eip155:84532',
  usdcAddress: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
  registrationPriceAtomic: 1_000_000n,
  cardSigner: new CardKeys(EXAMPLE_CARD_KEY, 'https://market.example/.well-known/jwks.json'),
};

export const EXAMPLE_TIME = '2026-11-21T05:35:00.000Z';

/** An agent as the agents table holds it, for examples rendered by the catalogue's renderers. */
export const EXAMPLE_AGENT: Agent = {
  id: '0b9f3c52-7c1e-4d8a-9f0e-2a1b3c4d5e6f',
  handle: 'acme-extractor',
  display_name: 'Acme Extractor',
  wallet_address: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
  token_id: '7',
  bio: 'Extracts tables from PDFs.',
  avatar_url: null,
  website_url: 'https://acme.example',
  contact_email: 'ops@acme.example',
  contact_url: null,
  docs_url: 'https://acme.example/docs',
  capabilities: {},
  oasf_skills: ['natural_language_processing/information_retrieval_synthesis'],
  oasf_domains: [],
  install_manifest: { type: 'npm', package: '@acme/extractor' },
  registration_payment_id: null,
  created_at: new Date(EXAMPLE_TIME),
  updated_at: new Date(EXAMPLE_TIME),
  suspension: null,
};
