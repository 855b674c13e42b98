/**
 * The name x402 v1 gives a chain (v2 names it by its CAIP-2 id). v1 names only the chains its
 * packages know; ours are Base and Base Sepolia. Both the payment flow and the documents that
 * state payment terms need it, so it sits with the other chain facts.
 */
const V1_NETWORK_NAMES: Record<number, string> = { 8453: 'base', 84532: 'base-sepolia' };

export const v1NetworkName = (chainId: number): string | undefined => V1_NETWORK_NAMES[chainId];
