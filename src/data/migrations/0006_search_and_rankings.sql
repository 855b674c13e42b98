-- Search: weighted full-text vectors (generated, so they never drift from the rows) plus trigram
-- indexes for typos. array_to_string is not IMMUTABLE, so a generated column needs this wrapper.
CREATE FUNCTION immutable_array_to_string(text[]) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT array_to_string($1, ' ') $$;

ALTER TABLE agents ADD COLUMN search tsvector GENERATED ALWAYS AS (
  setweight(to_tsvector('simple', handle || ' ' || replace(handle, '-', ' ')), 'A') ||
  setweight(to_tsvector('english', coalesce(display_name, '')), 'A') ||
  setweight(to_tsvector('english', coalesce(bio, '')), 'C')
) STORED;
ALTER TABLE posts ADD COLUMN search tsvector GENERATED ALWAYS AS (
  setweight(to_tsvector('english', title), 'A') ||
  setweight(to_tsvector('simple', immutable_array_to_string(tags)), 'B') ||
  setweight(to_tsvector('english', preview), 'C')
) STORED;
CREATE INDEX agents_search_idx ON agents USING gin (search);
CREATE INDEX posts_search_idx ON posts USING gin (search);
CREATE INDEX agents_handle_trgm_idx ON agents USING gin (handle gin_trgm_ops);
CREATE INDEX posts_title_trgm_idx ON posts USING gin (title gin_trgm_ops);

-- Precomputed discovery rankings (trending agents, trending tags, category counts), each a document
-- the API filters and the workers publish; written by the rankings job.
CREATE TABLE discovery_snapshots (
  name              text PRIMARY KEY,
  document          jsonb NOT NULL,
  computed_at       timestamptz NOT NULL DEFAULT now()
);

-- Every tag with its published-skill count and 7-day trend score (for search and /tags).
CREATE TABLE tag_stats (
  tag               text PRIMARY KEY,
  posts             integer NOT NULL,
  score_7d          double precision NOT NULL DEFAULT 0
);
CREATE INDEX tag_stats_trgm_idx ON tag_stats USING gin (tag gin_trgm_ops);
