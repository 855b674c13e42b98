import { createRequire } from 'node:module';

/**
 * The OASF taxonomy (v0.8.0, the version ERC-8004 tooling uses), as shipped in data/oasf.
 * Skills and domains are separate families: their ids overlap, so an entry is always named
 * with its family. Agents and posts store paths (`natural_language_processing/summarization`).
 */
export const OASF_VERSION = '0.8.0';

export interface OasfEntry {
  path: string;
  id: number;
  depth: number;
  caption: string;
}

export type OasfFamily = 'skills' | 'domains';

const require = createRequire(import.meta.url);
const load = (family: OasfFamily): OasfEntry[] => require(`../../../data/oasf/oasf-${OASF_VERSION}-${family}.json`);

const byFamily: Record<
  OasfFamily,
  { entries: OasfEntry[]; byPath: Map<string, OasfEntry>; byId: Map<number, OasfEntry> }
> = {
  skills: index(load('skills')),
  domains: index(load('domains')),
};

function index(entries: OasfEntry[]) {
  return { entries, byPath: new Map(entries.map((e) => [e.path, e])), byId: new Map(entries.map((e) => [e.id, e])) };
}

export const oasfEntries = (family: OasfFamily): readonly OasfEntry[] => byFamily[family].entries;

/** Resolves a path or numeric id (as a number or digits) of a family to its entry. */
export function resolveOasf(family: OasfFamily, ref: string | number): OasfEntry | undefined {
  const f = byFamily[family];
  if (typeof ref === 'number' || /^\d+$/.test(ref)) return f.byId.get(Number(ref));
  return f.byPath.get(ref.trim().replace(/^\/+|\/+$/g, ''));
}
