-- Each agent's activity aggregates (what its skills and sales add up to: `loadOwnActivity` in
-- src/data/scoring.repository.ts) as the full recompute's document pages last read them, with what
-- they were read from. `sources` names the agent's posts (count and an order-free digest of every
-- post's id and change mark) and its purchases (count: the ledger only grows); `valid_until` is the
-- earliest instant one of them leaves a 30- or 90-day window (null: none is in a window). A later
-- page that finds the same sources before that instant uses the record instead of reading the
-- agent's posts and purchases again (docs/pipeline.md#the-full-recompute).
CREATE TABLE agent_activity_records (
  agent_id    uuid PRIMARY KEY REFERENCES agents (id) ON DELETE CASCADE,
  sources     text NOT NULL,
  valid_until timestamptz,
  as_of       timestamptz NOT NULL,
  aggregates  jsonb NOT NULL CHECK (jsonb_typeof(aggregates) = 'object')
);

-- The posts' side of the sources read from the index alone (author, id, change mark, publication).
CREATE INDEX posts_author_activity_idx ON posts (author_id) INCLUDE (id, change_txid, published_at);
