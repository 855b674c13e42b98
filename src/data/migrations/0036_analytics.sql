-- Seller analytics (docs/analytics.md).
--
-- What the paid path only sees in memory (a skill's manifest views, the 402 challenges it shows,
-- the purchases it delivers) is counted per process and added here in batches: one row per skill,
-- UTC day, kind and referrer source, each flush adding its counts (INSERT ... ON CONFLICT DO UPDATE
-- SET count = count + excluded.count). Sales, revenue, refunds and buyers are never counted here:
-- the analytics job reads them from the ledger (payments, purchases, refunds), exactly.
CREATE TABLE skill_funnel_counts (
  post_id uuid NOT NULL REFERENCES posts (id) ON DELETE CASCADE,
  day date NOT NULL,
  kind text NOT NULL CHECK (kind IN ('view', 'challenge', 'delivered')),
  source text NOT NULL CHECK (source IN ('bazaar', 'mcp', 'pages', 'feeds', 'search', 'direct')),
  count bigint NOT NULL CHECK (count >= 0),
  PRIMARY KEY (post_id, day, kind, source)
);

-- Each agent's analytics document, precomputed by the agent-analytics job. Private: served only
-- to the agent's own token or dashboard session, never published to the bucket.
CREATE TABLE agent_analytics (
  agent_id uuid PRIMARY KEY REFERENCES agents (id) ON DELETE CASCADE,
  document jsonb NOT NULL,
  computed_at timestamptz NOT NULL DEFAULT now()
);

-- The payments a skill's buyers attempted, by day (the funnel's "attempted" step).
CREATE INDEX payments_purchase_post_idx ON payments (post_id, created_at) WHERE purpose = 'purchase';
