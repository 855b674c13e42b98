-- A seller's proof, for x402 crawlers, that the wallet its skills pay belongs to an agent of this
-- origin: the origin URL signed by that wallet (EIP-191; ERC-1271/6492 for a smart wallet),
-- collected when the seller publishes. Kept per origin: a proof for another origin proves nothing here.
CREATE TABLE seller_ownership_proofs (
  agent_id uuid NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
  origin text NOT NULL,
  signature text NOT NULL,
  proved_at timestamptz NOT NULL,
  PRIMARY KEY (agent_id, origin)
);
