-- migrate: without transaction
-- Replaced by purchases_seller_covering_idx (0039).
DROP INDEX CONCURRENTLY IF EXISTS purchases_seller_idx;
