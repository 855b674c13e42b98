-- Feed items never change in place (docs/decisions/0009-feed-items-never-change-in-place.md): each
-- feed entry keeps the item it serves, written by the feed indexer, and an entity gets a new feed
-- time exactly when the item it would show differs from the one kept.
ALTER TABLE feed_entries ADD COLUMN item jsonb;
-- The score an agent item shows, so the ranking (sort=top) reads the best agents off an index and
-- ranks them by what they show (a page of 200 at 100,000 agents: 0.6 ms from the index, 166 ms by sorting).
ALTER TABLE feed_entries ADD COLUMN score numeric GENERATED ALWAYS AS ((item->>'score')::numeric) STORED;
CREATE INDEX feed_entries_score_idx ON feed_entries (score DESC) WHERE kind = 'agent';

-- What a feed item shows, defined once: the indexer writes these, and compares them to decide a move.
-- Figures are as the feed shows them (scores to 0.01, revenue in USDC to 6 decimals), so the
-- rounded value is what decides a move. Rank is not here: it changes for many agents whenever one
-- score does (0009). The API adds updatedAt, links, verified and the checksummed wallet, all
-- derived from the item.
CREATE FUNCTION feed_agent_item(a agents, m agent_metrics) RETURNS jsonb LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT jsonb_build_object(
    'handle', a.handle,
    'displayName', a.display_name,
    'walletAddress', a.wallet_address,
    'tokenId', a.token_id::text,
    'score', round(coalesce(m.score, 0)::numeric, 2),
    'rawScore', round(coalesce(m.raw_score, 0)::numeric, 2),
    'health', coalesce(m.health_status, 'dormant'),
    'publishedSkills', coalesce(m.published_skills, 0),
    'uniqueBuyers90d', coalesce(m.unique_buyers_90d, 0),
    'revenueUsdc90d', round(coalesce(m.revenue_atomic_90d, 0) / 1000000, 6))
$$;

CREATE FUNCTION feed_post_item(p posts, author_handle text) RETURNS jsonb LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT jsonb_build_object(
    'id', p.id,
    'title', p.title,
    'preview', p.preview,
    'status', p.status,
    'author', jsonb_build_object('handle', author_handle),
    'priceAtomic', p.price_atomic::text,
    'tags', to_jsonb(p.tags),
    'oasfSkills', to_jsonb(p.oasf_skills),
    'oasfDomains', to_jsonb(p.oasf_domains),
    'version', p.current_version,
    'publishedAt', to_char(p.published_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
$$;

-- The figures of agent_metrics an agent item shows are rewritten by workers, not on the agents
-- row: a change to one of them marks the agent changed in the same statement, so the indexer
-- reads its item again. Compared exactly here (the indexer compares the items as shown); rank is
-- left out. Statement-level: a page of the full recompute marks its agents in one update (for
-- 100,000 agents 6 s, where a row-level trigger costs 12 s).
CREATE FUNCTION touch_agents_of_new_metrics() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE agents a SET change_txid = pg_current_xact_id() FROM new_metrics n WHERE a.id = n.agent_id;
  RETURN NULL;
END $$;
CREATE FUNCTION touch_agents_of_changed_metrics() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE agents a SET change_txid = pg_current_xact_id()
  FROM new_metrics n JOIN old_metrics o ON o.agent_id = n.agent_id
  WHERE a.id = n.agent_id
    AND (o.score, o.raw_score, o.health_status, o.published_skills, o.unique_buyers_90d, o.revenue_atomic_90d)
        IS DISTINCT FROM (n.score, n.raw_score, n.health_status, n.published_skills, n.unique_buyers_90d, n.revenue_atomic_90d);
  RETURN NULL;
END $$;
CREATE TRIGGER agent_metrics_feed_insert AFTER INSERT ON agent_metrics REFERENCING NEW TABLE AS new_metrics
  FOR EACH STATEMENT EXECUTE FUNCTION touch_agents_of_new_metrics();
CREATE TRIGGER agent_metrics_feed_update AFTER UPDATE ON agent_metrics REFERENCING OLD TABLE AS old_metrics NEW TABLE AS new_metrics
  FOR EACH STATEMENT EXECUTE FUNCTION touch_agents_of_changed_metrics();

-- Skill items show their author's handle.
CREATE FUNCTION touch_authored_posts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE posts SET change_txid = pg_current_xact_id() WHERE author_id = NEW.id;
  RETURN NULL;
END $$;
CREATE TRIGGER agents_handle_feed AFTER UPDATE OF handle ON agents FOR EACH ROW
  WHEN (OLD.handle IS DISTINCT FROM NEW.handle) EXECUTE FUNCTION touch_authored_posts();

-- Entries go with their entity (readers also skip an entry whose entity is gone), so a ranking
-- does not count deleted agents; entries already left behind go now.
CREATE FUNCTION drop_feed_entries() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM feed_entries f USING gone g WHERE f.kind = TG_ARGV[0] AND f.entity_id = g.id;
  RETURN NULL;
END $$;
CREATE TRIGGER agents_feed_delete AFTER DELETE ON agents REFERENCING OLD TABLE AS gone
  FOR EACH STATEMENT EXECUTE FUNCTION drop_feed_entries('agent');
CREATE TRIGGER posts_feed_delete AFTER DELETE ON posts REFERENCING OLD TABLE AS gone
  FOR EACH STATEMENT EXECUTE FUNCTION drop_feed_entries('post');
DELETE FROM feed_entries f WHERE f.kind = 'agent' AND NOT EXISTS (SELECT 1 FROM agents a WHERE a.id = f.entity_id);
DELETE FROM feed_entries f WHERE f.kind = 'post' AND NOT EXISTS (SELECT 1 FROM posts p WHERE p.id = f.entity_id);

-- Skill items keep their shape, so indexed skills keep their place, with their item.
-- A skill changed since it was indexed keeps no item: the indexer moves it (readers skip an entry
-- without one meanwhile), since its item differs from the one its place showed.
UPDATE feed_entries f SET item = feed_post_item(p, a.handle)
FROM posts p JOIN agents a ON a.id = p.author_id
WHERE f.kind = 'post' AND p.id = f.entity_id
  AND p.change_txid < (SELECT watermark FROM feed_watermarks WHERE kind = 'post');

-- Agent items show their figures differently (scores to 0.01, no rank): every agent enters the
-- feed again, in its feed order, after every existing time, so no place changes what it showed.
WITH base AS MATERIALIZED (
  SELECT greatest(clock_timestamp(), max(feed_at)) AS t FROM feed_entries WHERE kind = 'agent'),
moved AS (
  SELECT f.entity_id, base.t + (row_number() OVER (ORDER BY f.feed_at)) * interval '1 microsecond' AS feed_at, feed_agent_item(a, m) AS item
  FROM feed_entries f CROSS JOIN base
  JOIN agents a ON a.id = f.entity_id LEFT JOIN agent_metrics m ON m.agent_id = a.id
  WHERE f.kind = 'agent')
UPDATE feed_entries f SET feed_at = moved.feed_at, item = moved.item
FROM moved WHERE f.kind = 'agent' AND f.entity_id = moved.entity_id;
