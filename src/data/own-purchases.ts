import { type RawBuilder, sql } from 'kysely';

/**
 * The condition that a row of `purchases` (under `alias`) is not a seller's purchase of its own
 * skill. Such a purchase moves the seller's USDC back to itself: it stays recorded (the payment
 * was made, and the author reads its skill anyway), but no sales figure, score input, badge or
 * ranking counts it, or a seller could buy its way up for the price of the gas the facilitator
 * pays (docs/security.md, "Prices and wash trading").
 *
 * `buyer_agent_id` is the agent whose wallet paid, looked up by the paying wallet when the
 * purchase is recorded (`settlePurchases`); an agent's wallet is also its payout wallet, unique
 * and never changed, so the buyer agent is the seller exactly when the seller's wallet paid.
 * Comparing the two ids needs no join to `agents` in the aggregates over every purchase.
 */
export const notOwnPurchase = (alias = 'purchases'): RawBuilder<boolean> =>
  sql<boolean>`${sql.ref(`${alias}.buyer_agent_id`)} IS DISTINCT FROM ${sql.ref(`${alias}.seller_id`)}`;

/**
 * A skill's sales and its distinct buyer wallets, its seller's own purchases not counted: the
 * one definition the skill's page and its Bazaar listing both show. `postId` is a value or a
 * column reference of the enclosing statement.
 */
export const skillSales = (postId: RawBuilder<unknown> | string) => ({
  sales: sql<number>`(SELECT count(*)::int FROM purchases u WHERE u.post_id = ${postId} AND ${notOwnPurchase('u')})`,
  buyers: sql<number>`(SELECT count(DISTINCT u.buyer_address)::int FROM purchases u WHERE u.post_id = ${postId} AND ${notOwnPurchase('u')})`,
});
