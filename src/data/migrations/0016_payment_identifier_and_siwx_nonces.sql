-- The x402 payment-identifier a client sent with a payment: its idempotency key. One payment per
-- identifier, so the same id with another payload is a conflict the unique index decides.
ALTER TABLE payments ADD COLUMN payment_identifier text;
CREATE UNIQUE INDEX payments_payment_identifier_idx ON payments (payment_identifier) WHERE payment_identifier IS NOT NULL;

-- Sign-In-With-X nonces that granted access: inserting one is the replay check (a used nonce
-- conflicts). A message is refused past its maximum age anyway, so rows older than that are purged.
CREATE TABLE siwx_used_nonces (
  nonce text PRIMARY KEY,
  address text NOT NULL,
  resource text NOT NULL,
  used_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX siwx_used_nonces_used_at_idx ON siwx_used_nonces (used_at);
