import { z } from 'zod';
import { getAddress } from 'viem';
import type { ApiDeps } from '../deps.js';
import { defineRoute } from '../http/route.js';

/** At most 10,000 test USDC per call: enough for any demo, small enough to notice a loop. */
const FAUCET_MAX_ATOMIC = 10_000_000_000n;

const FaucetBody = z
  .object({
    address: z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'must be a 0x-prefixed 20-byte hex address'),
    amount: z
      .string()
      .regex(/^[1-9][0-9]{0,18}$/, 'must be a positive integer of atomic USDC units (6 decimals), as a string')
      .refine(
        (v) => !/^\d+$/.test(v) || BigInt(v) <= FAUCET_MAX_ATOMIC,
        `must be at most ${FAUCET_MAX_ATOMIC} (10,000 USDC)`,
      )
      .default('100000000')
      .describe('atomic USDC units; 1000000 = 1 USDC'),
  })
  .strict();

/** Development-only routes; mounted only when the faucet is enabled and the chain has one. */
export const devRoutes = (deps: ApiDeps) => {
  const faucet = deps.chain.faucet;
  if (!deps.config.faucetEnabled || !faucet) return [];
  return [
    defineRoute({
      method: 'post',
      path: '/dev/faucet',
      operationId: 'devFaucet',
      rateLimit: 'faucet',
      summary:
        'Mint test USDC to any address, and top its test ETH up to 0.01 for gas (an ERC-8004 registration needs some; development chains only)',
      tags: ['development'],
      body: FaucetBody,
      responses: {
        200: {
          description: 'Minted',
          schema: z.object({
            address: z.string(),
            amount: z.string(),
            asset: z.string(),
            network: z.string(),
            txHash: z.string(),
            chainId: z.number().describe('the development chain, for an ERC-8004 registration from the wallet'),
            rpcUrl: z.string().describe('its JSON-RPC endpoint'),
            identityRegistry: z.string().describe('the ERC-8004 IdentityRegistry on it'),
          }),
        },
      },
      handler: async ({ body, res }) => {
        const address = getAddress(body.address);
        const txHash = await faucet(address, BigInt(body.amount));
        res.set('Cache-Control', 'no-store').json({
          address,
          amount: body.amount,
          asset: deps.chain.usdc.address,
          network: deps.chain.network,
          txHash,
          chainId: deps.chain.chainId,
          rpcUrl: deps.chain.rpcUrl,
          identityRegistry: deps.chain.identityRegistry,
        });
      },
    }),
  ];
};
