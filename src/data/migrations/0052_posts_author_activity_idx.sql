-- migrate: without transaction
-- The posts' side of an agent's activity sources (0051) read from the index alone: author, id,
-- change mark, publication. Built concurrently, so writes go on during the build.
CREATE INDEX CONCURRENTLY IF NOT EXISTS posts_author_activity_idx ON posts (author_id) INCLUDE (id, change_txid, published_at);
