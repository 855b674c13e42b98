import { sql } from 'kysely';
import type { Executor } from './db.js';

/** Records (or replaces) a seller's ownership proof of `origin`. */
export async function saveOwnershipProof(
  db: Executor,
  proof: { agentId: string; origin: string; signature: string; at: Date },
): Promise<void> {
  await sql`
    INSERT INTO seller_ownership_proofs (agent_id, origin, signature, proved_at)
    VALUES (${proof.agentId}, ${proof.origin}, ${proof.signature}, ${proof.at})
    ON CONFLICT (agent_id, origin) DO UPDATE SET signature = excluded.signature, proved_at = excluded.proved_at`.execute(
    db,
  );
}

/** A paid published skill and, when its seller proved ownership of `origin`, that proof. */
export interface PaidListing {
  post_id: string;
  proof: string | null;
}

/** Every published skill with a price, oldest first, each with its seller's proof of `origin` if any. */
export async function findPaidListings(db: Executor, origin: string): Promise<PaidListing[]> {
  const { rows } = await sql<PaidListing>`
    SELECT p.id AS post_id, s.signature AS proof FROM posts p
    LEFT JOIN seller_ownership_proofs s ON s.agent_id = p.author_id AND s.origin = ${origin}
    WHERE p.status = 'published' AND p.price_atomic > 0
    ORDER BY p.first_published_at, p.id`.execute(db);
  return rows;
}

/** The distinct proofs of `origin` by sellers that have at least one paid published skill. */
export async function findSellerProofs(db: Executor, origin: string): Promise<string[]> {
  const { rows } = await sql<{ signature: string }>`
    SELECT s.signature FROM seller_ownership_proofs s
    WHERE s.origin = ${origin} AND EXISTS (
      SELECT 1 FROM posts p WHERE p.author_id = s.agent_id AND p.status = 'published' AND p.price_atomic > 0)
    ORDER BY s.proved_at, s.agent_id`.execute(db);
  return [...new Set(rows.map((r) => r.signature))];
}
