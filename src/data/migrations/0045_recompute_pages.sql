-- The similar pages of a full recompute run: planned when the run queues them, done when a page's
-- job has stored its lists. The run's second stage computes the documents once no planned page of
-- the run is left undone. Rows of runs planned more than two days ago are deleted when a run starts.
CREATE TABLE recompute_pages (
  run          text NOT NULL,
  first_agent  uuid NOT NULL,
  planned_at   timestamptz NOT NULL DEFAULT now(),
  done_at      timestamptz,
  PRIMARY KEY (run, first_agent)
);
CREATE INDEX recompute_pages_planned_at_idx ON recompute_pages (planned_at);
