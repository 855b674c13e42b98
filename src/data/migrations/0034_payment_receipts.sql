-- The signed x402 receipt of a settled payment, kept once signed: a receipt is a function of its
-- payment (transaction, settlement time) and of the receipt key, so the reputation mirrors, which
-- show the receipts of an agent's last 100 sales, reuse it instead of signing it again at every
-- recompute (a quarter of a first full recompute's CPU, docs/benchmarks.md). A row for another
-- key, transaction or time is not used; a newer signature replaces it.
CREATE TABLE payment_receipts (
  payment_id   uuid PRIMARY KEY REFERENCES payments (id) ON DELETE CASCADE,
  signer       text NOT NULL CHECK (signer ~ '^0x[0-9a-f]{40}$'),
  tx_hash      text NOT NULL,
  issued_at    bigint NOT NULL,
  signature    text NOT NULL CHECK (signature ~ '^0x[0-9a-f]+$')
);
