-- migrate: without transaction
-- A seller's sales (the score facts' sales aggregate, the analytics ledger days, the recent
-- sales) and a skill's sales and buyers are counted over every purchase of the seller or the
-- skill. Through the old indexes each such purchase was a read of its table row, scattered over
-- the table: about 0.7-1 s for a seller or a skill with 59,000 purchases. The new indexes (this
-- one and 0040) carry the columns those counts read, so they are index-only scans; the old ones
-- are dropped once both exist (0041, 0042). Each is built concurrently, so the paid path's inserts
-- go on during the build, and each step is a migration of its own, recorded once done: a build
-- cut off half-way leaves an invalid index, which the next attempt drops first (migrate.ts).
CREATE INDEX CONCURRENTLY IF NOT EXISTS purchases_seller_covering_idx ON purchases (seller_id, created_at) INCLUDE (buyer_address, buyer_agent_id, amount_atomic);
