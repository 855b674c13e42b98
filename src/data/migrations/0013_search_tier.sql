-- The search tier: a copy of the search vectors of the marketplace's best skills (most paid sales
-- in 90 days, then newest) plus every skill published in the last 7 days, with its own GIN index.
-- A search matches here first: intersecting two common words costs a tenth of what it costs over
-- every skill. Only when the tier holds fewer matches than asked for does a search go to the full
-- index, which is then cheap, since the words are rare. Empty (so unused) while the marketplace is
-- small. Rebuilt with the rankings; published skills join it at once (docs/discovery.md).
CREATE TABLE search_tier_posts (
  post_id  uuid PRIMARY KEY,
  search   tsvector NOT NULL
);
CREATE INDEX search_tier_posts_search_idx ON search_tier_posts USING gin (search) WITH (fastupdate = off);
