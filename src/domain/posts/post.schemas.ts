import { z } from 'zod';
import { formatUsdc } from '../../documents/site-agent-card.renderer.js';
import { AppError } from '../../platform/errors.js';
import { InstallManifest, oasfList } from '../shared-schemas.js';

/** The most a skill may cost: 1,000 USDC, in atomic units. */
export const MAX_PRICE_ATOMIC = 1_000_000_000n;
/** Total size of a version's files (UTF-8 bytes). Larger gets 413. */
export const MAX_BODY_BYTES = 200_000;
export const MAX_FILES = 50;

export const PriceAtomic = z
  .string()
  .regex(
    /^(0|[1-9][0-9]*)$/,
    'must be a non-negative integer of atomic USDC units (6 decimals), as a string; 0 means free',
  )
  .refine(
    (v) => !/^\d+$/.test(v) || (v.length <= 19 && BigInt(v) <= MAX_PRICE_ATOMIC),
    `must be at most ${MAX_PRICE_ATOMIC} (1,000 USDC)`,
  )
  .describe(
    "atomic USDC units (1000000 = 1 USDC); 0 = free; a paid skill costs at least the site's minimum (422 price_below_minimum below it)",
  );

/** 422 `price_below_minimum`: a paid skill priced below the least a sale may cost. */
export class PriceBelowMinimumError extends AppError {
  constructor(priceAtomic: bigint, minimumAtomic: bigint) {
    const reason = `a paid skill costs at least ${minimumAtomic} atomic USDC (${formatUsdc(minimumAtomic)} USDC); use 0 for a free skill`;
    super(422, 'price_below_minimum', `priceAtomic ${priceAtomic} is below the minimum: ${reason}`, {
      minimumAtomic: minimumAtomic.toString(),
      invalidParams: [{ name: 'priceAtomic', in: 'body', reason }],
    });
  }
}

/**
 * Refuses a paid price below `minimumAtomic` (MIN_PRICE_ATOMIC): every sale is settled on chain
 * at a gas cost the facilitator pays, and a sale worth less than that settles at a loss however
 * often it is bought (docs/security.md, "Prices and wash trading"). 0, a free skill, is always
 * allowed; `undefined` (no price given) sets nothing.
 */
export function assertPriceAllowed(priceAtomic: string | undefined, minimumAtomic: bigint): void {
  if (priceAtomic === undefined) return;
  const price = BigInt(priceAtomic);
  if (price > 0n && price < minimumAtomic) throw new PriceBelowMinimumError(price, minimumAtomic);
}

const Tag = z
  .string()
  .trim()
  .toLowerCase()
  .regex(/^[a-z0-9][a-z0-9-]{0,31}$/, 'tags are 1-32 of a-z, 0-9 and hyphens');

export const Tags = z
  .array(Tag)
  .max(10, 'at most 10 tags')
  .transform((tags) => [...new Set(tags)]);

export const PostFile = z
  .object({
    path: z
      .string()
      .min(1)
      .max(200)
      .describe('a relative "/"-separated path inside the skill folder: SKILL.md, scripts/run.py, references/api.md'),
    content: z.string().describe('the UTF-8 text of the file'),
  })
  .strict();

export const PostBody = z
  .object({ files: z.array(PostFile).min(1, 'at least one file, e.g. SKILL.md').max(MAX_FILES) })
  .strict()
  .refine((b) => new Set(b.files.map((f) => f.path)).size === b.files.length, 'file paths must be unique')
  .describe(
    'the paid content: an Agent Skill, SKILL.md (YAML frontmatter name and description, then instructions) and the files beside it',
  );

/** A seller's EIP-712 signature over a version (@skill-market/skill-protocol/version-signature), 0x hex. */
export const VersionSignature = z
  .string()
  .regex(/^0x[0-9a-fA-F]{130,4096}$/, 'must be a 0x-prefixed hex signature')
  .describe(
    "the seller wallet's EIP-712 signature of SkillVersion{postId, version, name, digest} (domain Skill Market, version 1)",
  );

export const VersionLabel = z
  .string()
  .trim()
  .min(1)
  .max(40)
  .regex(/^[0-9A-Za-z.+-]+$/, 'a version label such as 1.0.0')
  .default('1.0.0');

export const CreatePost = z
  .object({
    title: z.string().trim().min(3).max(140),
    preview: z.string().trim().max(4000).describe('free teaser shown to everyone'),
    body: PostBody,
    priceAtomic: PriceAtomic.default('0'),
    tags: Tags.default([]),
    oasfSkills: oasfList('skills').default([]),
    oasfDomains: oasfList('domains').default([]),
    installManifest: InstallManifest.optional(),
    version: VersionLabel,
  })
  .strict();
export type CreatePost = z.infer<typeof CreatePost>;

export const UpdatePost = z
  .object({
    title: z.string().trim().min(3).max(140),
    preview: z.string().trim().max(4000),
    priceAtomic: PriceAtomic,
    tags: Tags,
    oasfSkills: oasfList('skills'),
    oasfDomains: oasfList('domains'),
  })
  .partial()
  .strict()
  .refine((p) => Object.keys(p).length > 0, 'give at least one field to change');
export type UpdatePost = z.infer<typeof UpdatePost>;

export const NewVersion = z
  .object({
    body: PostBody,
    installManifest: InstallManifest.optional(),
    version: VersionLabel,
    versionSignature: VersionSignature.optional().describe(
      'the seller signature of the version this creates (its number is the current one plus one)',
    ),
  })
  .strict();
export type NewVersion = z.infer<typeof NewVersion>;
