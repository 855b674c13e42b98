import { createRequire } from 'node:module';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { AppError } from '../platform/errors.js';

const require = createRequire(import.meta.url);
const a2aSchema = require('./schemas/a2a-v0.3.0.schema.json');

// ajv-formats ships CJS with a default export; under ESM interop it may arrive wrapped.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  a: Ajv,
) => Ajv;

const ajv = new Ajv({ allErrors: true, strict: false });
addFormats(ajv);
ajv.addSchema(a2aSchema, 'a2a-v0.3.0');

export class DocumentInvalidError extends AppError {
  constructor(
    readonly schemaId: string,
    readonly errors: string[],
  ) {
    super(500, 'document_invalid', `document does not match ${schemaId}: ${errors.slice(0, 5).join('; ')}`);
  }
}

const cache = new Map<string, ValidateFunction>();

function validatorFor(ref: string): ValidateFunction {
  let fn = cache.get(ref);
  if (!fn) {
    fn = ajv.getSchema(ref);
    if (!fn) throw new Error(`unknown document schema ${ref}`);
    cache.set(ref, fn);
  }
  return fn;
}

export const SCHEMAS = {
  agentCard: 'a2a-v0.3.0#/definitions/AgentCard',
} as const;

/** Errors of `doc` against the schema `ref` (empty when valid). */
export function schemaErrors(ref: string, doc: unknown): string[] {
  const fn = validatorFor(ref);
  if (fn(doc)) return [];
  return (fn.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message}`);
}

/** Throws `DocumentInvalidError` unless `doc` matches; publishing never puts an invalid document. */
export function assertValid(ref: string, doc: unknown): void {
  const errors = schemaErrors(ref, doc);
  if (errors.length) throw new DocumentInvalidError(ref, errors);
}
