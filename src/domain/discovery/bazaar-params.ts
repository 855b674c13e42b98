import { z } from 'zod';
import { OASF_VERSION, resolveOasf } from '../taxonomy/oasf.js';

/**
 * The query parameters of the x402 Bazaar discovery API (`/discovery/resources`,
 * `/discovery/search`): the Bazaar's own filters and ours (OASF category, seller health, distinct
 * buyers, price). Each is checked before the database is asked: a value that cannot mean
 * anything is a 400, a value that is well formed but not ours (another network, an `sse` type)
 * matches nothing.
 */

export const BAZAAR_DEFAULT_LIMIT = 20;
export const BAZAAR_MAX_LIMIT = 100;
/** How deep offset paging goes; past it, narrow the filters. */
export const BAZAAR_MAX_OFFSET = 100_000;
/** Search ranks at most this many skills per query; `partialResults` says when more matched. */
export const SEARCH_WINDOW = 100;
/** The positions a search answer can hold: the registration, then each ranked skill as HTTP and MCP resources. */
export const SEARCH_POSITIONS = 1 + SEARCH_WINDOW * 2;

export const HEALTH_STATUSES = ['healthy', 'degraded', 'dormant'] as const;
export type Health = (typeof HEALTH_STATUSES)[number];

const digits = (name: string, min: number, max: number) =>
  z
    .string()
    .regex(/^\d{1,9}$/, `${name} must be a whole number`)
    .transform(Number)
    .refine((n) => n >= min && n <= max, `${name} must be between ${min} and ${max}`);

/** A comma-separated list, each entry trimmed, empty entries refused. */
const list = (entry: RegExp, what: string) =>
  z
    .string()
    .max(200)
    .transform((v) => v.split(',').map((s) => s.trim()))
    .refine((v) => v.every((s) => entry.test(s)), `must be a comma-separated list of ${what}`)
    .transform((v) => [...new Set(v)]);

/** An OASF skill or domain, as the rest of the API takes them: a path, or `skills:`/`domains:` and a path or id. */
export const OasfCategory = z
  .string()
  .max(200)
  .transform((ref, ctx) => {
    const m = /^(skills|domains):(.+)$/.exec(ref.trim());
    const families = m ? [m[1] as 'skills' | 'domains'] : (['skills', 'domains'] as const);
    const target = m?.[2] ?? ref;
    const found = families.flatMap((f) => resolveOasf(f, target) ?? []);
    if (found.length === 1 && found[0]) return found[0].path;
    ctx.addIssue({
      code: 'custom',
      message:
        found.length > 1
          ? `"${ref}" is both an OASF skill id and a domain id: write skills:${target} or domains:${target}`
          : `"${ref}" is not an OASF ${OASF_VERSION} skill or domain path or id`,
    });
    return z.NEVER;
  })
  .describe(
    `OASF ${OASF_VERSION} skill or domain: a path (natural_language_processing, technology/software_engineering) or skills:<id> / domains:<id>; matches skills filed under it`,
  );

/** The filters both endpoints take. */
export const bazaarFilters = {
  type: z
    .string()
    .regex(/^[a-z][a-z0-9-]{0,31}$/, 'must be a resource type such as http or mcp')
    .optional()
    .describe('resource type: http (a route) or mcp (a tool of the MCP server); each paid skill is listed as both'),
  payTo: z
    .string()
    .regex(
      /^(0x[0-9a-fA-F]{40}|[1-9A-HJ-NP-Za-km-z]{32,44})$/,
      'must be an EVM (0x and 40 hex digits) or Solana address',
    )
    .optional()
    .describe('payment recipient (a seller wallet, or the treasury for registration); any letter case'),
  scheme: z
    .string()
    .regex(/^[a-z][a-z0-9_-]{0,31}$/, 'must be a payment scheme such as exact')
    .optional()
    .describe('payment scheme; every resource here is paid with exact'),
  network: z
    .string()
    .regex(/^[-a-z0-9]{3,8}:[-_a-zA-Z0-9]{1,32}$/, 'must be a CAIP-2 network such as eip155:8453')
    .optional()
    .describe('CAIP-2 network the resource is paid on'),
  extensions: list(/^[a-z0-9][a-z0-9_-]{0,63}$/, 'extension keys such as bazaar')
    .optional()
    .describe('extension keys each resource must carry (comma-separated); resources here carry bazaar'),
  category: OasfCategory.optional(),
  health: list(/^(healthy|degraded|dormant)$/, 'healthy, degraded or dormant')
    .optional()
    .describe("the seller's health, one of the listed (healthy, degraded, dormant; comma-separated)"),
  minBuyers: digits('minBuyers', 0, 1_000_000_000)
    .optional()
    .describe('at least this many distinct buyer wallets of the skill'),
  maxPrice: z
    .string()
    .regex(/^(0|[1-9]\d{0,30})$/, 'must be a price in atomic units of USDC (a whole number, 6 decimals)')
    .optional()
    .describe('at most this price, in atomic units of USDC (1000000 = 1 USDC)'),
};

export const ListQuery = z.object({
  ...bazaarFilters,
  limit: digits('limit', 1, BAZAAR_MAX_LIMIT).default(BAZAAR_DEFAULT_LIMIT),
  offset: digits('offset', 0, BAZAAR_MAX_OFFSET).default(0),
});
export type ListQuery = z.infer<typeof ListQuery>;

/** A search continuation: the position of the next result, opaque to clients. */
export const encodeCursor = (offset: number) => Buffer.from(`o:${offset}`).toString('base64url');

export const SearchCursor = z
  .string()
  .max(64)
  .transform((cursor, ctx) => {
    const m = /^o:(\d{1,4})$/.exec(/^[A-Za-z0-9_-]+$/.test(cursor) ? Buffer.from(cursor, 'base64url').toString() : '');
    const offset = m ? Number(m[1]) : Number.NaN;
    if (offset > 0 && offset < SEARCH_POSITIONS) return offset;
    ctx.addIssue({ code: 'custom', message: 'is not a cursor this API returned: pass pagination.cursor as given' });
    return z.NEVER;
  })
  .describe('pagination.cursor of the previous page, as given');

export const SearchQuery = z.object({
  query: z.string().trim().min(2, 'must be at least 2 characters').max(200).describe('words of a skill or its tags'),
  ...bazaarFilters,
  limit: digits('limit', 1, BAZAAR_MAX_LIMIT).default(BAZAAR_DEFAULT_LIMIT),
  cursor: SearchCursor.optional(),
});
export type SearchQuery = z.infer<typeof SearchQuery>;

export type BazaarFilters = Pick<ListQuery, keyof typeof bazaarFilters>;
