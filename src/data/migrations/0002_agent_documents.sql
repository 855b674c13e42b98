-- Precomputed inputs of the per-agent documents (issue: crawlable documents).

-- Cached ERC-8004 resolution of an agent's token (chain reads and the registration file).
CREATE TABLE agent_identities (
  agent_id          uuid PRIMARY KEY REFERENCES agents (id) ON DELETE CASCADE,
  token_id          uint256 NOT NULL,
  owner             evm_address,
  agent_wallet      evm_address,
  token_uri         text,
  registration      jsonb,
  registration_errors text[] NOT NULL DEFAULT '{}',
  resolved_at       timestamptz NOT NULL DEFAULT now()
);

-- Each agent's most similar agents (top 10), written by its own recompute.
CREATE TABLE agent_similar (
  agent_id          uuid NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
  similar_id        uuid NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
  rank              smallint NOT NULL CHECK (rank BETWEEN 1 AND 10),
  similarity        double precision NOT NULL CHECK (similarity >= 0 AND similarity <= 1),
  method            text NOT NULL CHECK (method IN ('idf-jaccard', 'buyer-overlap')),
  shared            text[] NOT NULL DEFAULT '{}',
  PRIMARY KEY (agent_id, rank)
);
CREATE INDEX agent_similar_incoming_idx ON agent_similar (similar_id);

-- Population-wide quantile breakpoints the score's percentile components rank against.
CREATE TABLE population_stats (
  name              text PRIMARY KEY,
  breakpoints       double precision[] NOT NULL,
  population        integer NOT NULL,
  computed_at       timestamptz NOT NULL DEFAULT now()
);

-- Stable content hashes (documents with computedAt) are stored as the document's identity.
ALTER TABLE published_documents ADD COLUMN content_hash text;

-- Outbox dispatch by lease: an event is claimed for a while, and marked dispatched only after its
-- jobs are enqueued, so a dispatcher that dies between the two leaves it to the next one.
ALTER TABLE domain_events ADD COLUMN claimed_until timestamptz;
