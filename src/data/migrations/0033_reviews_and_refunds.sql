-- Trust from buyers: reviews signed by the wallets that paid, the ERC-8004 Reputation Registry's
-- feedback as the chain shows it, and refunds (docs/reputation.md).

-- A refunded purchase is no entitlement any more and weighs nothing in a rating.
ALTER TABLE purchases ADD COLUMN refunded_at timestamptz;

-- A buyer's review of a skill, one row per revision. The buyer signed the EIP-712 `SkillReview`
-- (docs/reputation.md) naming the purchase; `signature` is that signature, unique so that no
-- signature is accepted twice. At most one revision per buyer and skill is `live`; an edit
-- supersedes it, a revocation revokes it. `feedback` is the ERC-8004 feedback file exactly as
-- served (its keccak-256 is `feedback_hash`, the hash given on chain).
CREATE TABLE reviews (
  id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  post_id         uuid NOT NULL REFERENCES posts (id) ON DELETE CASCADE,
  seller_id       uuid NOT NULL REFERENCES agents (id),
  buyer_address   text NOT NULL CHECK (buyer_address ~ '^0x[0-9a-f]{40}$'),
  buyer_agent_id  uuid REFERENCES agents (id),
  payment_id      uuid NOT NULL REFERENCES payments (id),
  post_version    integer NOT NULL,
  revision        integer NOT NULL CHECK (revision >= 1),
  rating          smallint NOT NULL CHECK (rating BETWEEN 1 AND 5),
  text            text NOT NULL CHECK (char_length(text) <= 2000),
  issued_at       timestamptz NOT NULL,
  signature       text NOT NULL UNIQUE CHECK (signature ~ '^0x[0-9a-f]+$'),
  status          text NOT NULL DEFAULT 'live' CHECK (status IN ('live', 'superseded', 'revoked')),
  revoked_at      timestamptz,
  revocation_signature text UNIQUE,
  feedback        text NOT NULL,
  feedback_hash   text NOT NULL UNIQUE CHECK (feedback_hash ~ '^0x[0-9a-f]{64}$'),
  created_at      timestamptz NOT NULL DEFAULT now(),
  UNIQUE (post_id, buyer_address, revision)
);
CREATE UNIQUE INDEX reviews_live_idx ON reviews (post_id, buyer_address) WHERE status = 'live';
CREATE INDEX reviews_post_idx ON reviews (post_id, created_at DESC) WHERE status = 'live';
CREATE INDEX reviews_seller_idx ON reviews (seller_id, created_at DESC);
CREATE INDEX reviews_payment_idx ON reviews (payment_id);

-- The seller's one public answer to a buyer's review of its skill (to every revision of it).
CREATE TABLE review_responses (
  post_id         uuid NOT NULL REFERENCES posts (id) ON DELETE CASCADE,
  buyer_address   text NOT NULL CHECK (buyer_address ~ '^0x[0-9a-f]{40}$'),
  seller_id       uuid NOT NULL REFERENCES agents (id),
  text            text NOT NULL CHECK (char_length(text) BETWEEN 1 AND 2000),
  created_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (post_id, buyer_address)
);
CREATE INDEX review_responses_seller_idx ON review_responses (seller_id, created_at DESC);

-- Feedback given on the ERC-8004 Reputation Registry, as its `NewFeedback` events show it once
-- confirmed. `verification` is the marketplace's check of the feedback against its ledger
-- (`verified`: the file is a review the marketplace holds, by the same wallet, about a settled,
-- unrefunded purchase from that seller; anything else is `unverified` with a `reason`). Rows of
-- blocks a reorganisation removed are deleted; a revocation in such a block is undone.
CREATE TABLE onchain_feedback (
  id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  chain_id        bigint NOT NULL,
  registry        text NOT NULL CHECK (registry ~ '^0x[0-9a-f]{40}$'),
  agent_token_id  numeric(78, 0) NOT NULL,
  seller_id       uuid REFERENCES agents (id) ON DELETE SET NULL,
  client_address  text NOT NULL CHECK (client_address ~ '^0x[0-9a-f]{40}$'),
  feedback_index  bigint NOT NULL,
  value           numeric(40, 0) NOT NULL,
  value_decimals  smallint NOT NULL,
  tag1            text NOT NULL,
  tag2            text NOT NULL,
  endpoint        text NOT NULL,
  feedback_uri    text NOT NULL,
  feedback_hash   text NOT NULL,
  block_number    bigint NOT NULL,
  block_hash      text NOT NULL,
  tx_hash         text NOT NULL,
  log_index       integer NOT NULL,
  review_id       uuid REFERENCES reviews (id) ON DELETE SET NULL,
  verification    text NOT NULL CHECK (verification IN ('verified', 'unverified')),
  reason          text,
  revoked_block_number bigint,
  revoked_block_hash   text,
  created_at      timestamptz NOT NULL DEFAULT now(),
  UNIQUE (chain_id, registry, agent_token_id, client_address, feedback_index),
  CHECK ((verification = 'verified') = (reason IS NULL))
);
CREATE INDEX onchain_feedback_seller_idx ON onchain_feedback (seller_id, block_number DESC);
CREATE INDEX onchain_feedback_review_idx ON onchain_feedback (review_id) WHERE review_id IS NOT NULL;
CREATE INDEX onchain_feedback_block_idx ON onchain_feedback (block_number);

-- How far a chain follower has read: the last block it indexed and that block's hash, to notice
-- a reorganisation that replaced it.
CREATE TABLE chain_cursors (
  name            text PRIMARY KEY,
  block_number    bigint NOT NULL,
  block_hash      text NOT NULL,
  updated_at      timestamptz NOT NULL DEFAULT now()
);

-- A buyer's request for a refund of one purchase, within the refund window. One per purchase.
CREATE TABLE refund_requests (
  id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  payment_id      uuid NOT NULL UNIQUE REFERENCES payments (id),
  post_id         uuid NOT NULL REFERENCES posts (id) ON DELETE CASCADE,
  seller_id       uuid NOT NULL REFERENCES agents (id),
  buyer_address   text NOT NULL CHECK (buyer_address ~ '^0x[0-9a-f]{40}$'),
  reason          text NOT NULL CHECK (reason IN
                    ('not_as_described', 'does_not_work', 'security_concern', 'duplicate_purchase', 'other')),
  text            text NOT NULL CHECK (char_length(text) <= 2000),
  status          text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'accepted', 'declined')),
  decline_reason  text CHECK (decline_reason IN
                    ('outside_policy', 'works_as_described', 'already_used', 'other')),
  decline_text    text CHECK (char_length(decline_text) <= 2000),
  created_at      timestamptz NOT NULL DEFAULT now(),
  responded_at    timestamptz,
  CHECK ((status = 'declined') = (decline_reason IS NOT NULL))
);
CREATE INDEX refund_requests_seller_idx ON refund_requests (seller_id, created_at DESC);

-- A refund: the seller's EIP-3009 authorization from its payout wallet back to the buyer, relayed
-- by the marketplace's facilitator. One refund per purchase that is not `failed` (a failed relay
-- moved nothing and may be tried again with a new authorization); an authorization nonce is used
-- once. `receipt_signature` is the marketplace's EIP-712 `SkillRefund` receipt, once settled.
CREATE TABLE refunds (
  id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  payment_id      uuid NOT NULL REFERENCES payments (id),
  request_id      uuid REFERENCES refund_requests (id),
  post_id         uuid NOT NULL REFERENCES posts (id) ON DELETE CASCADE,
  seller_id       uuid NOT NULL REFERENCES agents (id),
  buyer_address   text NOT NULL CHECK (buyer_address ~ '^0x[0-9a-f]{40}$'),
  from_address    text NOT NULL CHECK (from_address ~ '^0x[0-9a-f]{40}$'),
  amount_atomic   numeric(78, 0) NOT NULL CHECK (amount_atomic > 0),
  asset           text NOT NULL,
  network         text NOT NULL,
  nonce           text NOT NULL UNIQUE CHECK (nonce ~ '^0x[0-9a-f]{64}$'),
  authorization_payload jsonb NOT NULL CHECK (jsonb_typeof(authorization_payload) = 'object'),
  status          text NOT NULL DEFAULT 'relaying' CHECK (status IN ('relaying', 'settled', 'failed')),
  tx_hash         text,
  failure_reason  text,
  receipt_signature text,
  created_at      timestamptz NOT NULL DEFAULT now(),
  settled_at      timestamptz
);
CREATE UNIQUE INDEX refunds_one_per_purchase_idx ON refunds (payment_id) WHERE status <> 'failed';
CREATE INDEX refunds_seller_idx ON refunds (seller_id, created_at DESC);
-- A settlement transaction may carry several authorizations (the facilitator batches them).
CREATE INDEX refunds_tx_idx ON refunds (tx_hash) WHERE tx_hash IS NOT NULL;

-- A review, a seller's response and a refund change what the skill's read models show (its
-- rating, its page): the skill counts as changed with them (docs/projections.md).
CREATE TRIGGER reviews_change AFTER INSERT OR UPDATE ON reviews FOR EACH ROW
  EXECUTE FUNCTION touch_post_of_version();
CREATE TRIGGER review_responses_change AFTER INSERT OR UPDATE ON review_responses FOR EACH ROW
  EXECUTE FUNCTION touch_post_of_version();
CREATE TRIGGER refunds_change AFTER INSERT OR UPDATE ON refunds FOR EACH ROW
  EXECUTE FUNCTION touch_post_of_version();

-- A skill's rating, kept with every change of what it counts (docs/reputation.md "Rating"): the
-- live reviews whose purchase is not refunded and whose on-chain feedback, if any, is not revoked.
-- `adjusted` is the Bayesian mean with a prior of 5 reviews of 3 stars, so a skill with one
-- 5-star review does not outrank one with two hundred 4.8-star reviews. Search sorts by it.
CREATE TABLE skill_ratings (
  post_id         uuid PRIMARY KEY REFERENCES posts (id) ON DELETE CASCADE,
  count           integer NOT NULL,
  total           integer NOT NULL,
  distribution    integer[] NOT NULL,
  adjusted        numeric(4, 3) NOT NULL,
  updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX skill_ratings_adjusted_idx ON skill_ratings (adjusted DESC, post_id);

-- One recount of a skill at a time: the skill's row is locked first, in its own statement, so the
-- count that follows reads every change committed before it, and two writers never overwrite each
-- other's count with an older one.
CREATE FUNCTION refresh_skill_rating(post uuid) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM posts WHERE id = post FOR UPDATE;
  INSERT INTO skill_ratings (post_id, count, total, distribution, adjusted, updated_at)
  SELECT post, count(r.id)::int, coalesce(sum(r.rating), 0)::int,
         ARRAY[count(*) FILTER (WHERE r.rating = 1), count(*) FILTER (WHERE r.rating = 2),
               count(*) FILTER (WHERE r.rating = 3), count(*) FILTER (WHERE r.rating = 4),
               count(*) FILTER (WHERE r.rating = 5)]::int[],
         round((5 * 3.0 + coalesce(sum(r.rating), 0)) / (5 + count(r.id)), 3), now()
  FROM reviews r
  JOIN purchases p ON p.payment_id = r.payment_id AND p.refunded_at IS NULL
  WHERE r.post_id = post AND r.status = 'live'
    AND NOT EXISTS (SELECT 1 FROM onchain_feedback f
                    WHERE f.review_id = r.id AND f.verification = 'verified'
                      AND f.client_address = r.buyer_address AND f.revoked_block_number IS NOT NULL)
  ON CONFLICT (post_id) DO UPDATE
    SET count = EXCLUDED.count, total = EXCLUDED.total, distribution = EXCLUDED.distribution,
        adjusted = EXCLUDED.adjusted, updated_at = EXCLUDED.updated_at;
END $$;

CREATE FUNCTION refresh_rating_of_review() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM refresh_skill_rating(NEW.post_id);
  RETURN NULL;
END $$;
CREATE TRIGGER reviews_rating AFTER INSERT OR UPDATE ON reviews FOR EACH ROW
  EXECUTE FUNCTION refresh_rating_of_review();

-- A refund takes its purchase's review out of the rating, and its on-chain feedback no longer
-- verifies: the purchase it proves was paid back.
CREATE FUNCTION refresh_rating_of_refund() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.refunded_at IS DISTINCT FROM OLD.refunded_at THEN
    PERFORM 1 FROM posts WHERE id = NEW.post_id FOR UPDATE;
    IF NEW.refunded_at IS NOT NULL THEN
      UPDATE onchain_feedback SET verification = 'unverified', reason = 'purchase_refunded', review_id = NULL
      WHERE review_id IN (SELECT r.id FROM reviews r WHERE r.payment_id = NEW.payment_id);
    END IF;
    PERFORM refresh_skill_rating(NEW.post_id);
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER purchases_rating AFTER UPDATE ON purchases FOR EACH ROW
  EXECUTE FUNCTION refresh_rating_of_refund();

-- Verified on-chain feedback revoked (or a revocation undone by a reorganisation) moves its
-- review's weight; only verified feedback names a review.
CREATE FUNCTION refresh_rating_of_feedback() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  post uuid;
BEGIN
  FOR post IN
    SELECT DISTINCT r.post_id FROM reviews r
    WHERE r.id IN (CASE WHEN TG_OP <> 'INSERT' THEN OLD.review_id END, CASE WHEN TG_OP <> 'DELETE' THEN NEW.review_id END)
  LOOP
    UPDATE posts SET change_txid = pg_current_xact_id() WHERE id = post;
    PERFORM refresh_skill_rating(post);
  END LOOP;
  RETURN NULL;
END $$;
CREATE TRIGGER onchain_feedback_rating AFTER INSERT OR UPDATE OR DELETE ON onchain_feedback FOR EACH ROW
  EXECUTE FUNCTION refresh_rating_of_feedback();
