-- migrate: without transaction
-- An agent's newest published skills, in the order its documents list them. Every page of agents'
-- documents, and every sale's re-render of its seller's, reads each agent's newest 100 published
-- skills; by (author_id, status) that read every published skill of the agent and sorted them, so
-- the most prolific sellers (thousands of skills) paid for all of them each time. With this index
-- the read stops at the hundredth. Built concurrently, so writes go on during it.
CREATE INDEX CONCURRENTLY IF NOT EXISTS posts_author_newest_published_idx
  ON posts (author_id, published_at DESC, id) WHERE status = 'published';
