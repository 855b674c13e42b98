-- The similar pages of a full recompute run that are done: the run's second stage computes the
-- documents once every page it queued is here (a page recorded twice, on a retry, counts once).
-- Rows of runs older than two days are deleted when a run starts.
CREATE TABLE recompute_pages (
  run          text NOT NULL,
  first_agent  uuid NOT NULL,
  done_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (run, first_agent)
);
CREATE INDEX recompute_pages_done_at_idx ON recompute_pages (done_at);
