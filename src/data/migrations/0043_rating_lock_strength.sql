-- A skill's recount locks the skill's row FOR NO KEY UPDATE, not FOR UPDATE. The recount only
-- needs one writer at a time, which NO KEY UPDATE already gives (it conflicts with itself).
-- FOR UPDATE also conflicts with the KEY SHARE lock that every foreign-key check on the skill
-- takes, and that caused deadlocks. A seller's response, say, first takes KEY SHARE (its foreign
-- key), then updates the skill's row (its change trigger). If the on-chain feedback of the same
-- skill was written in the gap between the two (the feedback's trigger updates the skill's row,
-- then recounts it), each transaction waited for the other, and one was aborted.
CREATE OR REPLACE FUNCTION refresh_skill_rating(post uuid) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM posts WHERE id = post FOR NO KEY UPDATE;
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

CREATE OR REPLACE FUNCTION refresh_rating_of_refund() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.refunded_at IS DISTINCT FROM OLD.refunded_at THEN
    PERFORM 1 FROM posts WHERE id = NEW.post_id FOR NO KEY UPDATE;
    IF NEW.refunded_at IS NOT NULL THEN
      UPDATE onchain_feedback SET verification = 'unverified', reason = 'purchase_refunded', review_id = NULL
      WHERE review_id IN (SELECT r.id FROM reviews r WHERE r.payment_id = NEW.payment_id);
    END IF;
    PERFORM refresh_skill_rating(NEW.post_id);
  END IF;
  RETURN NULL;
END $$;
