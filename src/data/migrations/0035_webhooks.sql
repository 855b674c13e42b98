-- Webhook endpoints and their deliveries (docs/webhooks.md). An endpoint belongs to one agent,
-- which chooses its URL and the event types it hears; its signing secret is kept in clear because
-- every delivery is signed with it (HMAC), so the table is as private as the agents' keys.
CREATE TABLE webhook_endpoints (
  id                       uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  agent_id                 uuid NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
  url                      text NOT NULL CHECK (length(url) <= 2048),
  event_types              text[] NOT NULL CHECK (cardinality(event_types) BETWEEN 1 AND 32),
  description              text NOT NULL DEFAULT '' CHECK (length(description) <= 200),
  secret                   text NOT NULL CHECK (secret ~ '^whsec_'),
  -- After a rotation the previous secret still signs (a second signature) until it expires, so a
  -- receiver can switch without missing a delivery.
  previous_secret          text CHECK (previous_secret ~ '^whsec_'),
  previous_secret_until    timestamptz,
  status                   text NOT NULL DEFAULT 'enabled' CHECK (status IN ('enabled', 'disabled')),
  disabled_reason          text,
  disabled_at              timestamptz,
  created_at               timestamptz NOT NULL DEFAULT now(),
  updated_at               timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_endpoints_agent ON webhook_endpoints (agent_id);

-- One row per message per endpoint, and one more per redelivery asked for. The unique key makes
-- each event delivered at most once per endpoint however often its fan-out runs. Only a bounded
-- excerpt of the receiver's answer is kept.
CREATE TABLE webhook_deliveries (
  id                       uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  endpoint_id              uuid NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  message_id               text NOT NULL,
  event_type               text NOT NULL,
  event_id                 bigint,
  payload                  jsonb NOT NULL,
  redelivery               integer NOT NULL DEFAULT 0 CHECK (redelivery >= 0),
  status                   text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed')),
  attempts                 integer NOT NULL DEFAULT 0,
  max_attempts             integer NOT NULL CHECK (max_attempts >= 1),
  next_attempt_at          timestamptz NOT NULL DEFAULT now(),
  last_attempt_at          timestamptz,
  response_status          integer,
  latency_ms               integer,
  response_excerpt         text CHECK (length(response_excerpt) <= 1024),
  error                    text CHECK (length(error) <= 500),
  created_at               timestamptz NOT NULL DEFAULT now(),
  UNIQUE (endpoint_id, message_id, redelivery)
);
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, created_at DESC);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_recent ON webhook_deliveries (created_at, status);
