-- migrate: without transaction
-- Replaced by purchases_post_covering_idx (0040).
DROP INDEX CONCURRENTLY IF EXISTS purchases_entitlement_idx;
