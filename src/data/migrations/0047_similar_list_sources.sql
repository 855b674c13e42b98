-- Which snapshot of every signature an agent's stored similar list was ranked from (its digest
-- and the ranking's parameters, `similarListSource` in src/domain/agents/similar.ts). A full
-- recompute whose snapshot is the same ranks such an agent exactly as before, so its similar page
-- leaves it alone. Any other write of the agent's list (an event's recompute, a buyer-overlap
-- list) deletes the row in the same transaction, so the next run ranks it again.
CREATE TABLE similar_list_sources (
  agent_id     uuid PRIMARY KEY REFERENCES agents (id) ON DELETE CASCADE,
  ranked_from  text NOT NULL
);
