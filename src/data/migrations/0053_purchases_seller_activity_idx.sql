-- migrate: without transaction
-- The seller's covering index (0039) with the purchases' change marks as well, so the purchases'
-- side of an agent's activity sources (0051) is read from the index alone, as the sales counts
-- are; the old index is dropped once this one exists (0054). Built concurrently, so the paid
-- path's inserts go on during the build.
CREATE INDEX CONCURRENTLY IF NOT EXISTS purchases_seller_activity_idx ON purchases (seller_id, created_at)
  INCLUDE (buyer_address, buyer_agent_id, amount_atomic, change_txid);
