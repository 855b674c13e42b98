-- Sealed days of seller analytics (docs/analytics.md#sealed-days).
--
-- A seller's analytics read 90 days of its sales, payment attempts and buyers. Read from the ledger
-- each time, one sale to a seller with tens of thousands of sales re-read them all. Days that can no
-- longer change (two UTC days back: no transaction that could still insert a purchase or payment
-- dated then is running) are summed once into these tables by the analytics job, and a document
-- reads them with only the newer days taken from the ledger. Derived data: dropping a seller's rows
-- (and its seller_analytics_sealed row) makes the next job sum its history again.

-- Per seller, skill and sealed UTC day: the sales, their sum and the purchase payments attempted.
CREATE TABLE seller_sales_days (
  seller_id uuid NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
  day date NOT NULL,
  post_id uuid NOT NULL REFERENCES posts (id) ON DELETE CASCADE,
  sales bigint NOT NULL CHECK (sales >= 0),
  amount_atomic numeric NOT NULL CHECK (amount_atomic >= 0),
  attempts bigint NOT NULL CHECK (attempts >= 0),
  PRIMARY KEY (seller_id, day, post_id)
);

-- Every buyer wallet of a seller in its sealed days, with the first and last day it bought.
CREATE TABLE seller_buyers (
  seller_id uuid NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
  buyer_address evm_address NOT NULL,
  first_day date NOT NULL,
  last_day date NOT NULL,
  PRIMARY KEY (seller_id, buyer_address)
);
-- A window's buyers, counted from the index alone.
CREATE INDEX seller_buyers_window_idx ON seller_buyers (seller_id, last_day, first_day);

-- The last sealed day of each seller (every day up to it is summed above).
CREATE TABLE seller_analytics_sealed (
  seller_id uuid PRIMARY KEY REFERENCES agents (id) ON DELETE CASCADE,
  through date NOT NULL
);
