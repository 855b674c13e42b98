-- agent_metrics.rank had no reader (a ranking computes its ranks from feed_entries as it is read,
-- decision 0009), and rewriting it every 15 minutes updated every agent_metrics row the full
-- recompute's pages were writing at the same time: the two took row locks in different orders and
-- deadlocked, and the rank update held the workers' pages for minutes. The population job now
-- writes no row the workers write.
ALTER TABLE agent_metrics DROP COLUMN rank;
