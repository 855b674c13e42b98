-- Each agent's activity aggregates (what its skills and sales add up to: `loadOwnActivity` in
-- src/data/scoring.repository.ts) and its published skills' digest (`readPublishedSkillsDigests`)
-- as the full recompute's document pages last read them, with what they were read from. `sources`
-- names the agent's posts (count and an order-free digest of every post's id and change mark, which
-- a write to one of its versions moves too) and its purchases (count and an order-free digest of
-- their change marks); `valid_until` is the earliest instant one of its posts or purchases leaves a
-- 30- or 90-day window (null: none is in a window). A later page that finds the same sources
-- before that instant uses the record instead of reading the agent's posts and purchases again
-- (docs/documents.md#what-the-full-recompute-leaves-alone).
CREATE TABLE agent_activity_records (
  agent_id    uuid PRIMARY KEY REFERENCES agents (id) ON DELETE CASCADE,
  sources     text NOT NULL,
  valid_until timestamptz,
  as_of       timestamptz NOT NULL,
  aggregates  jsonb NOT NULL CHECK (jsonb_typeof(aggregates) = 'object'),
  skills_digest text
);

-- A purchase's change mark moves with every write to it, as a post's does (a refund sets it
-- already), so the purchases' side of the sources sees any write (0053 carries it in the seller's
-- covering index, so that side is read from the index alone too).
CREATE TRIGGER purchases_change_txid BEFORE UPDATE ON purchases FOR EACH ROW EXECUTE FUNCTION touch_change_txid();
