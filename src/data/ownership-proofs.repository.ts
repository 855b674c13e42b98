import { sql } from 'kysely';
import type { Executor } from './db.js';

/** Records (or replaces) a seller's ownership proof of `origin`. */
export async function saveOwnershipProof(
  db: Executor,
  proof: { agentId: string; origin: string; signature: string; at: Date },
): Promise<void> {
  await db
    .insertInto('seller_ownership_proofs')
    .values({ agent_id: proof.agentId, origin: proof.origin, signature: proof.signature, proved_at: proof.at })
    .onConflict((oc) =>
      oc.columns(['agent_id', 'origin']).doUpdateSet((eb) => ({
        signature: eb.ref('excluded.signature'),
        proved_at: eb.ref('excluded.proved_at'),
      })),
    )
    .execute();
}

/** A paid published skill and, when its seller proved ownership of `origin`, that proof. */
export interface PaidListing {
  post_id: string;
  proof: string | null;
}

/** Every published skill with a price, oldest first, each with its seller's proof of `origin` if any. */
export async function findPaidListings(db: Executor, origin: string): Promise<PaidListing[]> {
  return db
    .selectFrom('posts as p')
    .leftJoin('seller_ownership_proofs as s', (join) =>
      join.onRef('s.agent_id', '=', 'p.author_id').on('s.origin', '=', origin),
    )
    .select(['p.id as post_id', 's.signature as proof'])
    .where('p.status', '=', sql.lit('published'))
    .where('p.price_atomic', '>', sql.lit('0'))
    .orderBy('p.first_published_at')
    .orderBy('p.id')
    .execute();
}

/** The distinct proofs of `origin` by sellers that have at least one paid published skill. */
export async function findSellerProofs(db: Executor, origin: string): Promise<string[]> {
  const rows = await db
    .selectFrom('seller_ownership_proofs as s')
    .select('s.signature')
    .where('s.origin', '=', origin)
    .where((eb) =>
      eb.exists(
        eb
          .selectFrom('posts as p')
          .select(eb.lit(1).as('one'))
          .whereRef('p.author_id', '=', 's.agent_id')
          .where('p.status', '=', sql.lit('published'))
          .where('p.price_atomic', '>', sql.lit('0')),
      ),
    )
    .orderBy('s.proved_at')
    .orderBy('s.agent_id')
    .execute();
  return [...new Set(rows.map((r) => r.signature))];
}
