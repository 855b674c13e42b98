-- Similarity reads signatures by feature (candidates) and by agent (scoring), 300 candidates ×
-- 50 features an agent: with the weight in both indexes these are index-only scans (the full
-- recompute vacuums the table after rebuilding it), instead of one heap page per row.
DROP INDEX IF EXISTS agent_signature_feature_idx;
CREATE INDEX IF NOT EXISTS agent_signature_feature_cover_idx ON agent_signature (feature, agent_id) INCLUDE (weight);
CREATE INDEX IF NOT EXISTS agent_signature_agent_cover_idx ON agent_signature (agent_id, feature) INCLUDE (weight);
