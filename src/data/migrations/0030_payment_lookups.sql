-- A wallet's payments, newest first, as payer or as payee (GET /api/payments), and the payments a
-- settlement transaction carried (GET /api/payments?txHash=).
CREATE INDEX payments_payer_created_idx ON payments (payer, created_at DESC, id DESC);
CREATE INDEX payments_pay_to_created_idx ON payments (pay_to, created_at DESC, id DESC);
CREATE INDEX payments_tx_hash_idx ON payments (tx_hash) WHERE tx_hash IS NOT NULL;
