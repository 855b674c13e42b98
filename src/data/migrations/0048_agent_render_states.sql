-- What each agent's documents were last rendered from, as the full recompute's document pages
-- recorded it: the digest of every input (`agentInputsDigest` in
-- src/domain/agents/agent-documents.renderer.ts, the code's fingerprint included) and the digest of
-- the identities its documents were published with then. A later page that finds the same inputs,
-- the same documents still published and its score document not due leaves the agent alone: it
-- would render and skip every document again.
CREATE TABLE agent_render_states (
  agent_id   uuid PRIMARY KEY REFERENCES agents (id) ON DELETE CASCADE,
  inputs     text NOT NULL,
  documents  text NOT NULL
);
