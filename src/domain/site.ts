/** Registration costs 1 USD in USDC (seed, Limits): 1_000_000 atomic units at 6 decimals. */
export const REGISTRATION_PRICE_ATOMIC = 1_000_000n;
