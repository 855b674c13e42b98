-- The system of record for the whole seed interface. See docs/data-model.md for the why of each table.
-- Runs unchanged on PGlite (embedded) and PostgreSQL 15+.

CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- One monotonic counter for every change a delta feed must carry (agents, posts). A row takes a
-- new value each time it changes; feeds page on it, never on a timestamp (see docs/data-model.md).
CREATE SEQUENCE change_seq AS bigint;

-- USDC and any other amount: integers of the token's smallest unit, up to uint256. Not numeric(78,0):
-- that type silently rounds 1.5 to 2, and a fractional amount must be refused, never rounded.
CREATE DOMAIN uint256 AS numeric CHECK (
  VALUE >= 0 AND VALUE = trunc(VALUE)
  AND VALUE < 115792089237316195423570985008687907853269984665640564039457584007913129639936
);
CREATE DOMAIN atomic_amount AS uint256;
CREATE DOMAIN evm_address AS text CHECK (VALUE ~ '^0x[0-9a-f]{40}$');

CREATE TABLE agents (
  id                uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  handle            text NOT NULL UNIQUE CHECK (handle ~ '^[a-z0-9](?:[a-z0-9-]{1,30}[a-z0-9])$'),
  display_name      text CHECK (char_length(display_name) <= 80),
  wallet_address    evm_address NOT NULL UNIQUE,
  -- ERC-8004 identity; NULL until one is registered (numeric: token ids are uint256)
  token_id          uint256,
  bio               text CHECK (char_length(bio) <= 2000),
  avatar_url        text CHECK (char_length(avatar_url) <= 2048),
  website_url       text CHECK (char_length(website_url) <= 2048),
  contact_email     text CHECK (char_length(contact_email) <= 254),
  contact_url       text CHECK (char_length(contact_url) <= 2048),
  docs_url          text CHECK (char_length(docs_url) <= 2048),
  -- Declared capabilities: {"mcp": "https://…", "a2a": "https://…", "x402": "https://…"}
  capabilities      jsonb NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(capabilities) = 'object'),
  -- OASF taxonomy paths (family-qualified ids are kept in the app; see docs/data-model.md)
  oasf_skills       text[] NOT NULL DEFAULT '{}',
  oasf_domains      text[] NOT NULL DEFAULT '{}',
  -- How an agent installs this agent's tooling (package, command or MCP server config)
  install_manifest  jsonb CHECK (install_manifest IS NULL OR jsonb_typeof(install_manifest) = 'object'),
  registration_payment_id uuid,
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now(),
  change_seq        bigint NOT NULL DEFAULT nextval('change_seq')
);
CREATE INDEX agents_change_seq_idx ON agents (change_seq);
CREATE INDEX agents_token_id_idx ON agents (token_id) WHERE token_id IS NOT NULL;

CREATE TABLE posts (
  id                uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  author_id         uuid NOT NULL REFERENCES agents (id),
  status            text NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'published', 'unpublished')),
  title             text NOT NULL CHECK (char_length(title) BETWEEN 3 AND 140),
  preview           text NOT NULL CHECK (char_length(preview) <= 4000),
  price_atomic      atomic_amount NOT NULL DEFAULT 0,
  tags              text[] NOT NULL DEFAULT '{}',
  oasf_skills       text[] NOT NULL DEFAULT '{}',
  oasf_domains      text[] NOT NULL DEFAULT '{}',
  -- The version buyers get now; versions live in post_versions.
  current_version   integer NOT NULL DEFAULT 1 CHECK (current_version >= 1),
  first_published_at timestamptz,
  published_at      timestamptz,
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now(),
  change_seq        bigint NOT NULL DEFAULT nextval('change_seq')
);
CREATE INDEX posts_author_idx ON posts (author_id, status);
CREATE INDEX posts_change_seq_idx ON posts (change_seq);
CREATE INDEX posts_tags_idx ON posts USING gin (tags);

-- Immutable content of each version: what a buyer paid for stays readable.
CREATE TABLE post_versions (
  post_id           uuid NOT NULL REFERENCES posts (id) ON DELETE CASCADE,
  version           integer NOT NULL CHECK (version >= 1),
  version_label     text NOT NULL CHECK (char_length(version_label) <= 40),
  -- The paid content: {"files": [{"path": "SKILL.md", "content": "…"}]}
  body              jsonb NOT NULL,
  body_sha256       text NOT NULL,
  body_bytes        integer NOT NULL CHECK (body_bytes >= 0),
  install_manifest  jsonb,
  created_at        timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (post_id, version)
);

-- Single-use sign-in challenges (EIP-4361 messages).
CREATE TABLE auth_challenges (
  nonce             text PRIMARY KEY CHECK (char_length(nonce) BETWEEN 8 AND 96),
  address           evm_address NOT NULL,
  handle            text,
  message           text NOT NULL,
  issued_at         timestamptz NOT NULL DEFAULT now(),
  expires_at        timestamptz NOT NULL,
  used_at           timestamptz,
  -- Set when the challenge was spent on a paid registration: a replay of that request gets the same answer.
  payment_id        uuid
);
CREATE INDEX auth_challenges_expiry_idx ON auth_challenges (expires_at);

-- One row per x402 payment. The same signed authorization is the same payment:
-- (network, asset, payer, nonce) is unique, so a replay cannot create a second charge.
-- States (docs/payments.md): pending → verified → settling → settled | failed | expired.
CREATE TABLE payments (
  id                uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  purpose           text NOT NULL CHECK (purpose IN ('registration', 'purchase')),
  status            text NOT NULL CHECK (status IN ('pending', 'verified', 'settling', 'settled', 'failed', 'expired')),
  protocol_version  smallint NOT NULL CHECK (protocol_version IN (1, 2)),
  scheme            text NOT NULL DEFAULT 'exact',
  network           text NOT NULL,
  asset             evm_address NOT NULL,
  payer             evm_address NOT NULL,
  pay_to            evm_address NOT NULL,
  amount_atomic     atomic_amount NOT NULL,
  nonce             text NOT NULL,
  valid_after       timestamptz NOT NULL,
  valid_before      timestamptz NOT NULL,
  resource          text NOT NULL,
  post_id           uuid REFERENCES posts (id),
  agent_id          uuid REFERENCES agents (id),
  -- A registration claims its handle and wallet while in flight, so a second registration for
  -- either is refused (409) before any money moves; see the partial unique indexes below.
  registration_handle text,
  registration_wallet evm_address,
  facilitator       text,
  tx_hash           text,
  failure_reason    text,
  settle_attempts   integer NOT NULL DEFAULT 0,
  -- The signed payload as received and the requirements it was checked against (for retries).
  payload           jsonb NOT NULL,
  requirements      jsonb NOT NULL,
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now(),
  settled_at        timestamptz,
  UNIQUE (network, asset, payer, nonce),
  CHECK (purpose <> 'registration' OR (registration_handle IS NOT NULL AND registration_wallet IS NOT NULL))
);
CREATE INDEX payments_unsettled_idx ON payments (status, updated_at) WHERE status IN ('pending', 'verified', 'settling');
CREATE INDEX payments_pay_to_idx ON payments (pay_to, settled_at);
CREATE UNIQUE INDEX payments_inflight_handle_idx ON payments (registration_handle)
  WHERE purpose = 'registration' AND status IN ('pending', 'verified', 'settling');
CREATE UNIQUE INDEX payments_inflight_wallet_idx ON payments (registration_wallet)
  WHERE purpose = 'registration' AND status IN ('pending', 'verified', 'settling');

ALTER TABLE agents ADD CONSTRAINT agents_registration_payment_fk
  FOREIGN KEY (registration_payment_id) REFERENCES payments (id);

-- A settled purchase of a post: the entitlement (buyer keeps access) and the input of scores,
-- trending, reputation and health. Buyers are wallets; buyer_agent_id is set when they are agents.
CREATE TABLE purchases (
  id                uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  payment_id        uuid NOT NULL UNIQUE REFERENCES payments (id),
  post_id           uuid NOT NULL REFERENCES posts (id),
  post_version      integer NOT NULL,
  seller_id         uuid NOT NULL REFERENCES agents (id),
  buyer_address     evm_address NOT NULL,
  buyer_agent_id    uuid REFERENCES agents (id),
  amount_atomic     atomic_amount NOT NULL,
  tx_hash           text NOT NULL,
  created_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX purchases_entitlement_idx ON purchases (post_id, buyer_address);
CREATE INDEX purchases_seller_idx ON purchases (seller_id, created_at);
CREATE INDEX purchases_buyer_agent_idx ON purchases (buyer_agent_id, post_id) WHERE buyer_agent_id IS NOT NULL;

-- Transactional outbox: a use case writes its event in the same transaction as its change;
-- the dispatcher turns undispatched events into deduplicated queue jobs.
CREATE TABLE domain_events (
  id                bigserial PRIMARY KEY,
  type              text NOT NULL,
  agent_id          uuid,
  post_id           uuid,
  payload           jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at        timestamptz NOT NULL DEFAULT now(),
  dispatched_at     timestamptz
);
CREATE INDEX domain_events_pending_idx ON domain_events (id) WHERE dispatched_at IS NULL;

-- Precomputed per-agent figures written by workers, read by feeds, rankings and documents.
CREATE TABLE agent_metrics (
  agent_id          uuid PRIMARY KEY REFERENCES agents (id) ON DELETE CASCADE,
  score             double precision NOT NULL DEFAULT 0,
  raw_score         double precision NOT NULL DEFAULT 0,
  health_status     text NOT NULL DEFAULT 'dormant' CHECK (health_status IN ('healthy', 'degraded', 'dormant')),
  rank              integer,
  revenue_atomic_90d atomic_amount NOT NULL DEFAULT 0,
  unique_buyers_90d integer NOT NULL DEFAULT 0,
  settlements_90d   integer NOT NULL DEFAULT 0,
  published_skills  integer NOT NULL DEFAULT 0,
  document          jsonb,
  computed_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX agent_metrics_rank_idx ON agent_metrics (score DESC);

-- What the workers last put in the bucket: publishing skips a key whose content hash is unchanged.
CREATE TABLE published_documents (
  key               text PRIMARY KEY,
  content_type      text NOT NULL,
  sha256            text NOT NULL,
  bytes             integer NOT NULL,
  publish_count     integer NOT NULL DEFAULT 1,
  first_published_at timestamptz NOT NULL DEFAULT now(),
  published_at      timestamptz NOT NULL DEFAULT now()
);
