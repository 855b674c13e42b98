-- migrate: without transaction
-- A seller's sales (the score facts' sales aggregate, the analytics ledger days, the recent
-- sales) and a skill's sales and buyers are counted over every purchase of the seller or the
-- skill. Through the old indexes each such purchase was a read of its table row, scattered over
-- the table: about 0.7-1 s for a seller or a skill with 59,000 purchases. The two indexes now
-- carry the columns those counts read, so they are index-only scans. Built concurrently, so the
-- paid path's inserts go on during the build; each step can be run again (docs/operations.md).
DROP INDEX CONCURRENTLY IF EXISTS purchases_seller_covering_idx;
CREATE INDEX CONCURRENTLY purchases_seller_covering_idx ON purchases (seller_id, created_at) INCLUDE (buyer_address, buyer_agent_id, amount_atomic);
DROP INDEX CONCURRENTLY IF EXISTS purchases_seller_idx;
DROP INDEX CONCURRENTLY IF EXISTS purchases_post_covering_idx;
CREATE INDEX CONCURRENTLY purchases_post_covering_idx ON purchases (post_id, buyer_address) INCLUDE (buyer_agent_id, seller_id);
DROP INDEX CONCURRENTLY IF EXISTS purchases_entitlement_idx;
