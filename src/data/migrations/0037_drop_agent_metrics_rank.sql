-- agent_metrics keeps no rank. The column had no reader (a ranking computes its ranks from
-- feed_entries as it is read, decision 0009), and rewriting it every 15 minutes updated every
-- agent_metrics row while a full recompute's pages were writing theirs: the two took row locks in
-- different orders and deadlocked, and the rank update held the pages for minutes. With it go its
-- index on score, which nothing else reads (every write of a score had to update it, and could
-- not be a heap-only update), so the population statistics write no row the workers write.
ALTER TABLE agent_metrics DROP COLUMN rank;
DROP INDEX agent_metrics_rank_idx;
