-- Buyer overlap (the similarity fallback) looks purchases up by buyer wallet.
CREATE INDEX IF NOT EXISTS purchases_buyer_idx ON purchases (buyer_address, seller_id);

-- Each agent's similarity signature: at most 50 of its rarest features with their idf weight at
-- the time. Similarity reads these (bounded) instead of whole feature sets, whose size is unbounded
-- for prolific agents; agent_features stays the source of the document frequencies.
CREATE TABLE agent_signature (
  agent_id          uuid NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
  feature           text NOT NULL,
  weight            double precision NOT NULL CHECK (weight > 0),
  PRIMARY KEY (agent_id, feature)
);
CREATE INDEX agent_signature_feature_idx ON agent_signature (feature, agent_id);
