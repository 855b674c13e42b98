-- The score document copy an agent's metrics row kept when its render state was recorded, as the
-- MD5 of its jsonb text. A full recompute's page compares it in PostgreSQL with the row's copy now
-- (the copy stands for the published score document only while it is the same), rather than
-- reading every copy back and hashing it to decide whom to leave alone.
ALTER TABLE agent_render_states ADD COLUMN score_copy text;
