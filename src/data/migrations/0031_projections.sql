-- One change mechanism for every read model of a skill (docs/projections.md): the feeds, the
-- x402 Bazaar listings, the skill's manifest and page, and the skills index all follow the
-- change_txid of the rows they are rendered from, each from its own watermark.

-- The cursors of every projection that follows change_txid, by name (one per projection and
-- table it reads): the two feeds keep theirs ('agent', 'post'). A cursor is a place in the
-- (change_txid, id) order of its table: every change at or before (watermark, after_id) is
-- projected. Read in bounded batches from there, a pass is a bounded statement at any size.
ALTER TABLE feed_watermarks RENAME TO projection_watermarks;
ALTER TABLE projection_watermarks RENAME COLUMN kind TO projection;
ALTER TABLE projection_watermarks RENAME CONSTRAINT feed_watermarks_pkey TO projection_watermarks_pkey;
ALTER TABLE projection_watermarks ADD COLUMN after_id uuid NOT NULL DEFAULT '00000000-0000-0000-0000-000000000000';
CREATE INDEX agents_change_idx ON agents (change_txid, id);
DROP INDEX agents_change_txid_idx;
CREATE INDEX posts_change_idx ON posts (change_txid, id);
DROP INDEX posts_change_txid_idx;

-- A sale changes its skill's page (sales and buyers). Purchases are written once; the writing
-- transaction's id is kept like the agents' and posts' own, so a projection finds the skills
-- sold since its watermark without a lock on the skill's row, which concurrent buyers would
-- queue on. Rows written before this column are older than every watermark: they stay NULL.
ALTER TABLE purchases ADD COLUMN change_txid xid8;
ALTER TABLE purchases ALTER COLUMN change_txid SET DEFAULT pg_current_xact_id();
CREATE INDEX purchases_change_idx ON purchases (change_txid, id);

-- A version added or signed changes what the skill's manifest and the skills index show: the
-- skill counts as changed with it.
CREATE FUNCTION touch_post_of_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE posts SET change_txid = pg_current_xact_id() WHERE id = NEW.post_id;
  RETURN NULL;
END $$;
CREATE TRIGGER post_versions_change AFTER INSERT OR UPDATE ON post_versions FOR EACH ROW
  EXECUTE FUNCTION touch_post_of_version();

-- The Bazaar listings follow change_txid like the others, from three cursors: the skills
-- ('bazaar', where their watermark stood), their sales ('bazaar:sales': a listing shows its
-- buyers) and their sellers ('bazaar:sellers': a listing shows its seller's handle, avatar and
-- health). A seller's change reaches its listings only when one of those differs from what the
-- listing was rendered with (seller_key), so a sale, which moves the seller's figures, never
-- renders every listing of a seller again.
INSERT INTO projection_watermarks (projection, watermark) SELECT 'bazaar', watermark FROM bazaar_index_state;
INSERT INTO projection_watermarks (projection, watermark) SELECT 'bazaar:sales', pg_snapshot_xmin(pg_current_snapshot()) FROM bazaar_index_state;
INSERT INTO projection_watermarks (projection, watermark) SELECT 'bazaar:sellers', watermark FROM bazaar_index_state;
ALTER TABLE bazaar_index_state DROP COLUMN watermark;
ALTER TABLE bazaar_listings ADD COLUMN seller_key text NOT NULL DEFAULT '';
-- A rebuild of every listing (after a change of base URL, chain, asset, treasury, registration
-- price or listing shape) runs in pages, one per pass, from where the last page stopped.
ALTER TABLE bazaar_index_state ADD COLUMN rebuilding_for text, ADD COLUMN rebuild_after uuid;

-- A marketplace that already has skills has their manifests and pages published (the outbox asked
-- for them until now): the skill documents start from the oldest transaction still running
-- rather than publish every one again. The skills whose events the outbox has not dispatched yet
-- are marked changed here, so the projection takes them up instead. Their index shards are
-- published as their skills change, and all of them with the next publish of the index
-- (jobs/skills-index.job.ts).
INSERT INTO projection_watermarks (projection, watermark)
SELECT cursor, pg_snapshot_xmin(pg_current_snapshot())
FROM (VALUES ('skill-documents'), ('skill-documents:sales')) c(cursor)
WHERE EXISTS (SELECT 1 FROM posts);
UPDATE posts SET change_txid = pg_current_xact_id()
WHERE id IN (SELECT post_id FROM domain_events WHERE dispatched_at IS NULL AND post_id IS NOT NULL);

-- The most bought listed skills (/.well-known/x402, the skills index's inline skills) and the
-- newest published ones are read in order off an index, not sorted out of every skill.
CREATE INDEX bazaar_listings_buyers_idx ON bazaar_listings (buyers DESC, listed_at DESC, post_id);
CREATE INDEX posts_newest_published_idx ON posts (first_published_at DESC, id) WHERE status = 'published';
