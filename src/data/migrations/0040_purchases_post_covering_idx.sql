-- migrate: without transaction
-- The entitlement lookup's index, carrying what a skill's sales and buyers count (see 0039).
CREATE INDEX CONCURRENTLY IF NOT EXISTS purchases_post_covering_idx ON purchases (post_id, buyer_address) INCLUDE (buyer_agent_id, seller_id);
