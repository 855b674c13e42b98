-- Similarity at scale: each agent's features are kept (refreshed by its own recompute), and the
-- document frequency of every feature is refreshed with the population quantiles, so one agent's
-- similar list costs a few indexed reads instead of a scan of every post.
CREATE TABLE agent_features (
  agent_id          uuid NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
  feature           text NOT NULL,
  PRIMARY KEY (agent_id, feature)
);
CREATE INDEX agent_features_feature_idx ON agent_features (feature, agent_id);

CREATE TABLE feature_df (
  feature           text PRIMARY KEY,
  df                integer NOT NULL CHECK (df > 0)
);
