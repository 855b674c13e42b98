-- migrate: without transaction
-- A refund found by the request it answers. Each page of agents' documents reads its sellers'
-- median response time, joining their answered requests to the refunds that settled them; without
-- this index that join read every refund of the marketplace once for each seller of the page, a cost that grew with all
-- sellers' refunds rather than with the page's own. Built concurrently, so writes go on during it.
CREATE INDEX CONCURRENTLY IF NOT EXISTS refunds_request_idx ON refunds (request_id) WHERE request_id IS NOT NULL;
