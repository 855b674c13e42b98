import { Ajv, type ValidateFunction } from 'ajv';
import { createRequire } from 'node:module';
import type { FormatsPlugin } from 'ajv-formats';
import { AppError } from '../platform/errors.js';
import { A2A_AGENT_CARD_SCHEMA, A2A_V03_AGENT_CARD_SCHEMA, A2A_V1_AGENT_CARD_SCHEMA } from './a2a-agent-card.schema.js';
import type { AnyPublishedDocument, JsonSchema } from './document.js';

// ajv-formats is CommonJS whose types declare an ES default export; required, it is the plugin itself.
const addFormats: FormatsPlugin = createRequire(import.meta.url)('ajv-formats');

const ajv = new Ajv({ allErrors: true, strict: false });
addFormats(ajv);

/**
 * A rendered document that does not match its schema. Rendering is deterministic, so trying again
 * gives the same document: the job fails for good rather than retrying.
 */
export class DocumentInvalidError extends AppError {
  constructor(
    readonly schemaId: string,
    readonly errors: string[],
  ) {
    super(500, 'document_invalid', `document does not match ${schemaId}: ${errors.slice(0, 5).join('; ')}`);
  }

  override get retryable(): boolean {
    return false;
  }
}

// One compiled validator per schema object (the two AgentCards share theirs, and a schema with an
// `$id` may be added to Ajv only once).
const compiled = new WeakMap<JsonSchema, ValidateFunction>();

function validatorFor(schema: JsonSchema): ValidateFunction {
  let fn = compiled.get(schema);
  if (!fn) {
    fn = ajv.compile(schema);
    compiled.set(schema, fn);
  }
  return fn;
}

/** Schemas documents are checked against besides the catalogue's (tests name them). */
export const SCHEMAS = {
  /** What every published card matches: A2A v1.0 with the v0.3 members, and A2A v0.3. */
  agentCard: A2A_AGENT_CARD_SCHEMA,
  /** The vendored A2A v1.0 AgentCard, strict (check a card's `a2aV1Members`). */
  agentCardV1: A2A_V1_AGENT_CARD_SCHEMA,
  /** The vendored A2A v0.3.0 AgentCard. */
  agentCardV03: A2A_V03_AGENT_CARD_SCHEMA,
} as const;

/** Errors of `doc` against `schema` (empty when valid). */
export function schemaErrors(schema: JsonSchema, doc: unknown): string[] {
  const fn = validatorFor(schema);
  if (fn(doc)) return [];
  return (fn.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message}`);
}

/** Errors of `doc` against its catalogue entry's schema (empty when valid, or when it has none). */
export function documentErrors(document: AnyPublishedDocument, doc: unknown): string[] {
  return document.schema ? schemaErrors(document.schema, doc) : [];
}

/** Throws `DocumentInvalidError` unless `doc` matches its catalogue entry's schema. */
export function assertValidDocument(document: AnyPublishedDocument, doc: unknown): void {
  const errors = documentErrors(document, doc);
  if (errors.length) throw new DocumentInvalidError(document.id, errors);
}
