import { jsonBytes } from '../../documents/document.js';
import type { SiteInfo } from '../../documents/site-info.js';
import { siteAgentCardDocument } from '../../documents/site/site-agent-card.document.js';
import {
  bestPracticesSpecDocument,
  crawlSpecDocument,
  installExtensionSpecDocument,
  scoreSpecDocument,
} from '../../documents/site/specs.document.js';
import { bestPracticesSpec, scoreSpec } from '../scoring/spec.js';
import type { ReceiptIssuer } from '../payments/protocol/extensions/offer-receipt.js';
import { publishDocuments, type PublishDeps, type PublishInput } from './publish-document.js';

/**
 * The site-level documents as they read now: the site card (with the key that signs payment
 * receipts), the crawl extension and the methodologies.
 */
export function siteDocuments(site: SiteInfo, receipts: ReceiptIssuer): PublishInput[] {
  const base = site.baseUrl;
  const receiptSigner = { address: receipts.address, kid: receipts.kid };
  return [
    { document: siteAgentCardDocument, doc: siteAgentCardDocument.render({ ...site, receiptSigner }) },
    { document: crawlSpecDocument, doc: crawlSpecDocument.render(base) },
    { document: scoreSpecDocument, doc: scoreSpec(base) },
    { document: bestPracticesSpecDocument, doc: bestPracticesSpec(base) },
    { document: installExtensionSpecDocument, doc: installExtensionSpecDocument.render(base) },
  ].map(({ document, doc }) => ({ document, key: document.key(), body: jsonBytes(doc) }));
}

/** Renders, validates and publishes the site-level documents; the outcomes of the card and the crawl spec. */
export async function publishSiteDocuments(deps: PublishDeps & { site: SiteInfo; receipts: ReceiptIssuer }) {
  const [card, crawlSpec] = await publishDocuments(deps, siteDocuments(deps.site, deps.receipts));
  return { card: card?.outcome, crawlSpec: crawlSpec?.outcome };
}
