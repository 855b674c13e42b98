/**
 * Writes the variable table of docs/configuration.md from the declaration in
 * src/platform/config.ts, between the two marker comments; the prose around it is left as it is.
 * Run with `npm run docs:config`; test/contract/config-docs.test.ts fails while the two differ.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { CONFIG_GROUPS, configVariableDocs, type ConfigGroup } from '../src/platform/config.js';

export const CONFIG_DOC_PATH = join(import.meta.dirname, '../docs/configuration.md');
export const TABLE_BEGIN = '<!-- config-table: written by `npm run docs:config` from src/platform/config.ts -->';
export const TABLE_END = '<!-- /config-table -->';

const cell = (text: string) => text.replaceAll('|', '\\|');

/** The generated part: a heading and a table per group, every variable in declaration order. */
export function renderConfigTable(): string {
  const variables = configVariableDocs();
  const sections = (Object.entries(CONFIG_GROUPS) as Array<[ConfigGroup, string]>).map(([group, heading]) => {
    const rows = variables
      .filter((v) => v.group === group)
      .map((v) => `| \`${v.env}\` | ${cell(v.default)} | ${cell(v.production)} | ${cell(v.doc)} |`);
    return [
      `### ${heading}`,
      '',
      '| variable | default (development) | in production | what it does |',
      '|---|---|---|---|',
      ...rows,
    ].join('\n');
  });
  return sections.join('\n\n');
}

/** The document with the part between the markers replaced by `table`. */
export function withConfigTable(markdown: string, table: string): string {
  const begin = markdown.indexOf(TABLE_BEGIN);
  const end = markdown.indexOf(TABLE_END);
  if (begin < 0 || end < begin) {
    throw new Error(`docs/configuration.md must contain ${TABLE_BEGIN} and then ${TABLE_END}`);
  }
  return `${markdown.slice(0, begin + TABLE_BEGIN.length)}\n${table}\n${markdown.slice(end)}`;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const before = readFileSync(CONFIG_DOC_PATH, 'utf8');
  const after = withConfigTable(before, renderConfigTable());
  if (after === before) {
    console.log('docs/configuration.md: the variable table is up to date');
  } else {
    writeFileSync(CONFIG_DOC_PATH, after);
    console.log('docs/configuration.md: the variable table was rewritten');
  }
}
