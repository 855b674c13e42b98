-- Search vocabulary: every lexeme of the search vectors without digits, with how many published
-- skills and agents contain it. Search uses it to correct typos (trigram match against this small
-- table instead of against every title) and to leave out words so common they select nothing.
-- The row with word '' holds the totals. Rebuilt by the population job (docs/discovery.md).
CREATE TABLE search_vocabulary (
  word              text PRIMARY KEY,
  posts             integer NOT NULL DEFAULT 0,
  agents            integer NOT NULL DEFAULT 0
);
CREATE INDEX search_vocabulary_trgm_idx ON search_vocabulary USING gin (word gin_trgm_ops);
