-- What the last full rebuild of every agent's features and signatures was built from: a digest of
-- every published skill's tags and OASF categories with its author, every agent's own OASF
-- categories, and the code that derives them (`featureSourcesDigest` in
-- src/domain/agents/similar.ts), kept on the `signatures` row. A full recompute that finds the same
-- digest leaves the features, frequencies and signatures as they are: they are a function of those
-- sources, and a rebuild would write every row again to the same values.
ALTER TABLE population_stats ADD COLUMN sources text;
