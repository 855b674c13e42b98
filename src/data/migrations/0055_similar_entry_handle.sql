-- Each entry of a stored similar list carries its agent's handle, as the documents show it, so a
-- list and its digest are read from agent_similar alone (the full recompute's pages compare the
-- digest of every agent's list and read the lists only for the agents they render). Two triggers
-- keep it the agent's current handle: an entry takes it when written, and a rename rewrites it in
-- every list holding the agent, which moves those lists' digests, so their agents are rendered again.

-- The rename trigger first: creating it locks agents against writes until this migration commits,
-- so no rename can commit between the backfill's snapshot and the triggers.
CREATE FUNCTION rename_in_similar_lists() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE agent_similar SET similar_handle = NEW.handle WHERE similar_id = NEW.id;
  RETURN NULL;
END $$;
CREATE TRIGGER agents_handle_similar AFTER UPDATE OF handle ON agents FOR EACH ROW
  WHEN (OLD.handle IS DISTINCT FROM NEW.handle) EXECUTE FUNCTION rename_in_similar_lists();

ALTER TABLE agent_similar ADD COLUMN similar_handle text;
UPDATE agent_similar s SET similar_handle = a.handle FROM agents a WHERE a.id = s.similar_id;
ALTER TABLE agent_similar ALTER COLUMN similar_handle SET NOT NULL;

-- Read under the lock a foreign key check takes (FOR KEY SHARE), so a rename committing meanwhile
-- is waited for and its handle read; a rename that comes after waits for this row's transaction,
-- then rewrites it. An agent that does not exist leaves the handle null: the insert fails.
CREATE FUNCTION similar_entry_handle() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  SELECT handle INTO NEW.similar_handle FROM agents WHERE id = NEW.similar_id FOR KEY SHARE;
  RETURN NEW;
END $$;
CREATE TRIGGER agent_similar_handle BEFORE INSERT OR UPDATE OF similar_id, similar_handle ON agent_similar
  FOR EACH ROW EXECUTE FUNCTION similar_entry_handle();
