-- Delta feeds (docs/decisions/0004-delta-feeds.md): every change to an agent or post records the
-- writing transaction's id; a single-writer indexer moves changes whose transactions have all ended
-- (below the snapshot xmin) into feed_entries, with unique, increasing feed_at times.
ALTER TABLE agents ADD COLUMN change_txid xid8 NOT NULL DEFAULT pg_current_xact_id();
ALTER TABLE posts ADD COLUMN change_txid xid8 NOT NULL DEFAULT pg_current_xact_id();

CREATE FUNCTION touch_change_txid() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.change_txid := pg_current_xact_id();
  RETURN NEW;
END $$;
CREATE TRIGGER agents_change_txid BEFORE UPDATE ON agents FOR EACH ROW EXECUTE FUNCTION touch_change_txid();
CREATE TRIGGER posts_change_txid BEFORE UPDATE ON posts FOR EACH ROW EXECUTE FUNCTION touch_change_txid();
CREATE INDEX agents_change_txid_idx ON agents (change_txid);
CREATE INDEX posts_change_txid_idx ON posts (change_txid);

CREATE TABLE feed_entries (
  kind              text NOT NULL CHECK (kind IN ('agent', 'post')),
  entity_id         uuid NOT NULL,
  feed_at           timestamptz NOT NULL,
  PRIMARY KEY (kind, entity_id)
);
CREATE UNIQUE INDEX feed_entries_order_idx ON feed_entries (kind, feed_at);

CREATE TABLE feed_watermarks (
  kind              text PRIMARY KEY,
  watermark         xid8 NOT NULL
);
