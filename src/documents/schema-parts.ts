import type { JsonSchema } from './document.js';

/** Small builders for the catalogue's JSON Schemas: a member list reads like the document it describes. */
export const string: JsonSchema = { type: 'string' };
export const number: JsonSchema = { type: 'number' };
export const integer: JsonSchema = { type: 'integer' };
export const boolean: JsonSchema = { type: 'boolean' };
export const anyObject: JsonSchema = { type: 'object' };
export const nullable = (schema: JsonSchema): JsonSchema => ({ anyOf: [schema, { type: 'null' }] });
export const arrayOf = (items: JsonSchema): JsonSchema => ({ type: 'array', items });
export const oneOfValues = (...values: readonly (string | number | boolean)[]): JsonSchema => ({ enum: values });

/**
 * An object with these members, all required unless listed in `optional`. Other members are
 * allowed: a document may grow a member without breaking readers, and the schema says what
 * readers may count on.
 */
export function object(properties: Record<string, JsonSchema>, optional: readonly string[] = []): JsonSchema {
  return {
    type: 'object',
    properties,
    required: Object.keys(properties).filter((k) => !optional.includes(k)),
  };
}

/** A methodology or extension document under /spec/: its `$id` is its own URL. */
export const specSchema = (extra: Record<string, JsonSchema> = {}): JsonSchema =>
  object({ $id: { type: 'string', format: 'uri' }, title: string, ...extra });
