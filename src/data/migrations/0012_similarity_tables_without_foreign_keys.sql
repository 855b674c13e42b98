-- agent_features and agent_signature are derived data: written only from agents' and posts' own
-- rows (in the same statement), and replaced whole by every full recompute. Their foreign keys to
-- agents checked, and locked, the agent row of each of ~5M inserted rows per rebuild (at 100k
-- agents: 48 s with them, 27 s without). Agents are never deleted by the service; rows of an agent
-- deleted by hand go with the next full rebuild, and similar lists never name an agent that no
-- longer exists (names are joined from agents).
ALTER TABLE agent_features DROP CONSTRAINT IF EXISTS agent_features_agent_id_fkey;
ALTER TABLE agent_signature DROP CONSTRAINT IF EXISTS agent_signature_agent_id_fkey;
