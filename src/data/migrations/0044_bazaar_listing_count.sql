-- How many listings there are, kept with every statement that adds or drops one, so the Bazaar's
-- unfiltered list (`GET /discovery/resources`, what crawlers page through) states its total without
-- counting the listings on every page: at 620,000 listings that count read the whole table (1.5 s
-- measured, on a table not vacuumed since the listings were written). An upsert that updates a listing adds nothing:
-- an INSERT's transition table holds only the rows it inserted.
-- Listings written by a projector pass still running would be missed by the first count: the
-- pass waits for this migration instead.
LOCK TABLE bazaar_listings IN SHARE ROW EXCLUSIVE MODE;
CREATE TABLE bazaar_listing_count (
  id        boolean PRIMARY KEY DEFAULT true CHECK (id),
  listings  bigint NOT NULL CHECK (listings >= 0)
);
INSERT INTO bazaar_listing_count (listings) SELECT count(*) FROM bazaar_listings;

-- A statement that adds or drops nothing (an upsert that only updated listings) leaves the row be.
CREATE FUNCTION count_added_listings() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  n bigint := (SELECT count(*) FROM added);
BEGIN
  IF n > 0 THEN UPDATE bazaar_listing_count SET listings = listings + n; END IF;
  RETURN NULL;
END $$;
CREATE FUNCTION count_dropped_listings() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  n bigint := (SELECT count(*) FROM gone);
BEGIN
  IF n > 0 THEN UPDATE bazaar_listing_count SET listings = listings - n; END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER bazaar_listings_added AFTER INSERT ON bazaar_listings REFERENCING NEW TABLE AS added
  FOR EACH STATEMENT EXECUTE FUNCTION count_added_listings();
CREATE TRIGGER bazaar_listings_dropped AFTER DELETE ON bazaar_listings REFERENCING OLD TABLE AS gone
  FOR EACH STATEMENT EXECUTE FUNCTION count_dropped_listings();
