-- The x402 Bazaar discovery API (/discovery/resources, /discovery/search) answers from these rows:
-- one per published paid skill, its DiscoveryResource as the 402 of the skill states it (item),
-- beside the columns its filters read. The feed indexer keeps them in step with the skills and
-- their sellers, from the same change_txid watermark the delta feeds use (docs/discovery.md).
CREATE TABLE bazaar_listings (
  post_id        uuid PRIMARY KEY,
  seller_id      uuid NOT NULL,
  -- The payee, lower-case (filters compare addresses without their checksum case).
  pay_to         text NOT NULL,
  amount_atomic  atomic_amount NOT NULL CHECK (amount_atomic > 0),
  -- Every OASF skill and domain path of the skill with each of its ancestors (a/b/c: a, a/b,
  -- a/b/c), so a category matches the skills filed under it through the GIN index.
  categories     text[] NOT NULL,
  seller_health  text NOT NULL,
  -- Distinct buyer wallets of the skill, all time.
  buyers         integer NOT NULL,
  -- When the item last changed: the DiscoveryResource's lastUpdated, and the list order.
  listed_at      timestamptz NOT NULL,
  item           jsonb NOT NULL
);
CREATE INDEX bazaar_listings_order_idx ON bazaar_listings (listed_at DESC, post_id);
CREATE INDEX bazaar_listings_pay_to_idx ON bazaar_listings (pay_to);
CREATE INDEX bazaar_listings_seller_idx ON bazaar_listings (seller_id);
CREATE INDEX bazaar_listings_categories_idx ON bazaar_listings USING gin (categories);

-- Where the listings stand: the change_txid watermark they are indexed to; what they were
-- rendered for (base URL, chain, asset, treasury, price of a registration, item shape), so a
-- change of any of these renders every listing again; the registration's own listing; and a
-- version that moves whenever a listing does (the API's page cache key).
CREATE TABLE bazaar_index_state (
  id              boolean PRIMARY KEY DEFAULT true CHECK (id),
  watermark       xid8 NOT NULL,
  rendered_for    text NOT NULL,
  registration    jsonb NOT NULL,
  registration_at timestamptz NOT NULL,
  version         bigint NOT NULL
);

-- Listings go with their skill.
CREATE FUNCTION drop_bazaar_listings() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM bazaar_listings l USING gone g WHERE l.post_id = g.id;
  UPDATE bazaar_index_state SET version = version + 1 WHERE EXISTS (SELECT 1 FROM gone);
  RETURN NULL;
END $$;
CREATE TRIGGER posts_bazaar_delete AFTER DELETE ON posts REFERENCING OLD TABLE AS gone
  FOR EACH STATEMENT EXECUTE FUNCTION drop_bazaar_listings();
