-- migrate: without transaction
-- The entitlement lookup's index, carrying what a skill's sales and buyers count (see 0039).
DROP INDEX CONCURRENTLY IF EXISTS purchases_post_covering_idx;
CREATE INDEX CONCURRENTLY purchases_post_covering_idx ON purchases (post_id, buyer_address) INCLUDE (buyer_agent_id, seller_id);
