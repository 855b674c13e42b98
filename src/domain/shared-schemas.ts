import { z } from 'zod';
import { resolveOasf, OASF_VERSION, type OasfFamily } from './taxonomy/oasf.js';

/**
 * An ISO 8601 date-time with an offset that names a real instant PostgreSQL can compare: the
 * syntax alone lets through February 30th, year 0000 and offsets past ±15:59, which the database
 * refuses. Years run from 1970 (nothing here is older) to 9999.
 */
export const IsoDateTime = z.iso
  .datetime({ offset: true, error: 'must be an ISO 8601 date-time, e.g. 2026-11-21T06:00:00.000000Z' })
  .refine(isRealInstant, 'must be a real date and time between 1970 and 9999, with an offset within ±15:59');

function isRealInstant(text: string): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2}))?/.exec(text);
  if (!m) return false;
  const [year, month, day, hour, minute, second] = m.slice(1).map((v) => Number(v ?? 0)) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  if (year < 1970 || hour > 23 || minute > 59 || second > 59) return false;
  const date = new Date(Date.UTC(year, month - 1, day));
  if (date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) return false;
  const offset = /([+-])(\d{2}):?(\d{2})$/.exec(text);
  return !offset || (Number(offset[2]) <= 15 && Number(offset[3]) <= 59);
}

/** An https URL: never javascript:, data:, http: or anything else a page could be tricked by. */
export const HttpsUrl = z
  .url({ protocol: /^https$/, hostname: z.regexes.domain, error: 'must be an https URL' })
  .max(2048, 'must be at most 2048 characters');

/** OASF skill or domain references (paths or ids), normalised to paths; unknown ones are refused. */
export const oasfList = (family: OasfFamily) =>
  z
    .array(z.union([z.string().max(200), z.number().int()]))
    .max(20, 'at most 20 entries')
    .transform((refs, ctx) => {
      const paths: string[] = [];
      refs.forEach((ref, i) => {
        const entry = resolveOasf(family, ref);
        if (!entry)
          ctx.addIssue({
            code: 'custom',
            path: [i],
            message: `"${ref}" is not an OASF ${OASF_VERSION} ${family.slice(0, -1)} path or id`,
          });
        else if (!paths.includes(entry.path)) paths.push(entry.path);
      });
      return paths;
    })
    .describe(`OASF ${OASF_VERSION} ${family}: paths (a/b) or numeric ids; stored as paths`);

/**
 * How an agent installs a skill or agent tooling: an npm or pip package, a shell command, or an
 * MCP server configuration (stdio command or remote https URL).
 */
export const InstallManifest = z.discriminatedUnion('type', [
  z
    .object({
      type: z.literal('npm'),
      package: z.string().min(1).max(214),
      version: z.string().max(64).optional(),
      command: z.string().max(1000).optional(),
    })
    .strict(),
  z
    .object({
      type: z.literal('pip'),
      package: z.string().min(1).max(214),
      version: z.string().max(64).optional(),
      command: z.string().max(1000).optional(),
    })
    .strict(),
  z
    .object({
      type: z.literal('command'),
      command: z.string().min(1).max(1000),
      shell: z.enum(['sh', 'powershell']).default('sh'),
    })
    .strict(),
  z
    .object({
      type: z.literal('mcp'),
      name: z.string().min(1).max(100),
      command: z.string().max(500).optional(),
      args: z.array(z.string().max(500)).max(50).optional(),
      url: HttpsUrl.optional(),
      env: z.record(z.string().regex(/^[A-Z_][A-Z0-9_]*$/), z.string().max(500)).optional(),
    })
    .strict()
    .refine(
      (m) => Boolean(m.command) !== Boolean(m.url),
      'an MCP server has either a command (stdio) or a url (remote), not both',
    ),
]);
export type InstallManifest = z.infer<typeof InstallManifest>;
