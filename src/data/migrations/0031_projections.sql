-- One change mechanism for every read model of a skill (docs/projections.md): the feeds, the
-- x402 Bazaar listings, the skill's manifest and page, and the skills index all follow the
-- change_txid of the rows they are rendered from, each from its own watermark.

-- The watermarks of every projection that follows change_txid, by name: the two feeds keep
-- theirs ('agent', 'post'); the skill documents (manifest, page, skills index) get one.
ALTER TABLE feed_watermarks RENAME TO projection_watermarks;
ALTER TABLE projection_watermarks RENAME COLUMN kind TO projection;
ALTER TABLE projection_watermarks RENAME CONSTRAINT feed_watermarks_pkey TO projection_watermarks_pkey;

-- A sale changes its skill's page (sales and buyers). Purchases are written once; the writing
-- transaction's id is kept like the agents' and posts' own, so a projection finds the skills
-- sold since its watermark without a lock on the skill's row, which concurrent buyers would
-- queue on. Rows written before this column are older than every watermark: they stay NULL.
ALTER TABLE purchases ADD COLUMN change_txid xid8;
ALTER TABLE purchases ALTER COLUMN change_txid SET DEFAULT pg_current_xact_id();
CREATE INDEX purchases_change_txid_idx ON purchases (change_txid);

-- A version added or signed changes what the skill's manifest and the skills index show: the
-- skill counts as changed with it.
CREATE FUNCTION touch_post_of_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE posts SET change_txid = pg_current_xact_id() WHERE id = NEW.post_id;
  RETURN NULL;
END $$;
CREATE TRIGGER post_versions_change AFTER INSERT OR UPDATE ON post_versions FOR EACH ROW
  EXECUTE FUNCTION touch_post_of_version();

-- The Bazaar listings follow change_txid like the others: their watermark moves beside theirs.
INSERT INTO projection_watermarks (projection, watermark) SELECT 'bazaar', watermark FROM bazaar_index_state;
ALTER TABLE bazaar_index_state DROP COLUMN watermark;
