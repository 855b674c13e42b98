-- migrate: without transaction
-- Replaced by purchases_seller_activity_idx (0053), which carries the same columns and the change mark.
DROP INDEX CONCURRENTLY IF EXISTS purchases_seller_covering_idx;
