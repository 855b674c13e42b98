import { cacheControl, type CachePolicy } from './cache-policy.js';

/** A JSON Schema, as the validator and the OpenAPI document take it. */
export type JsonSchema = Record<string, unknown>;

export const JSON_TYPE = 'application/json; charset=utf-8';
export const SVG_TYPE = 'image/svg+xml; charset=utf-8';
export const HTML_TYPE = 'text/html; charset=utf-8';

/**
 * What a path parameter of a published document may be. A value outside these cannot name a
 * published object (handles are 3 to 32 characters, post ids are UUIDs), so the edge does not ask
 * the bucket for it.
 */
export const PATH_PARAMETERS: Readonly<Record<string, string>> = {
  handle: '[a-z0-9-]{3,32}',
  postId: '[0-9a-f-]{36}',
  shard: '[0-9a-f]{2}',
  version: '[1-9][0-9]{0,8}',
};

/** What a document module declares. */
export interface DocumentSpec<V, D> {
  /** Stable name of the document, also its schema's name in the OpenAPI document. */
  id: string;
  /** Public path template (OpenAPI syntax), e.g. `/api/agents/{handle}/score.json`. */
  path: string;
  /**
   * The bucket key of a document whose path cannot be one (`/` has no name): the edge serves it
   * from this object with an exact location. Every other document's key is its path.
   */
  objectKey?: string;
  contentType: string;
  /** How long caches keep it: the bucket object and the API's answer carry the same policy. */
  cache: CachePolicy;
  /** Headers the document is always served with besides Content-Type and Cache-Control. */
  headers?: Readonly<Record<string, string>>;
  /** JSON Schema of a JSON document (absent for SVG and HTML). */
  schema?: JsonSchema;
  /** Documents the schema must accept, and documents it must refuse (test/unit/document-catalogue.test.ts). */
  examples: { valid: readonly unknown[]; invalid: readonly unknown[] };
  /** The pure renderer: the same view model always gives the same document. */
  render: (view: V) => D;
}

/** A catalogue entry: the module's declarations plus what follows from them. */
export interface PublishedDocument<V = never, D = unknown> extends DocumentSpec<V, D> {
  /** Regular-expression source of the public paths, without the leading slash or anchors. */
  pattern: string;
  /** Matches a public path of this document. */
  matches(path: string): boolean;
  /** The bucket object key of the document at `params` (its public path without the leading slash). */
  key(params?: Readonly<Record<string, string>>): string;
  /** The Cache-Control value of the bucket object and of the API's answer. */
  cacheControl: string;
  /** The path with example parameters, for tests and samples. */
  samplePath: string;
}

/** Any catalogue entry, whatever its view model: what publishing, the edge and the routes need. */
export type AnyPublishedDocument = PublishedDocument<never, unknown>;

const SAMPLE_PARAMETERS: Readonly<Record<string, string>> = {
  handle: 'some-agent-7',
  postId: '5f0c7a9e-1b2c-4d3e-8f90-a1b2c3d4e5f6',
  shard: '5f',
  version: '2',
};

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Path template -> regular-expression source (no leading slash, no anchors). */
export function patternOf(template: string): string {
  return template
    .replace(/^\/+/, '')
    .split(/(\{\w+\})/)
    .map((part) => {
      const param = /^\{(\w+)\}$/.exec(part)?.[1];
      if (param === undefined) return escapeRegExp(part);
      const re = PATH_PARAMETERS[param];
      if (re === undefined) throw new Error(`document path ${template}: no pattern for {${param}}`);
      return re;
    })
    .join('');
}

/** Declares a published document; path pattern, key and Cache-Control follow from its path and policy. */
export function defineDocument<V, D>(spec: DocumentSpec<V, D>): PublishedDocument<V, D> {
  const pattern = patternOf(spec.path);
  const re = new RegExp(`^/${pattern}$`);
  const fill = (params: Readonly<Record<string, string>>) =>
    spec.path.replace(/\{(\w+)\}/g, (_, name: string) => {
      const value = params[name];
      if (value === undefined) throw new Error(`document ${spec.id}: no value for {${name}}`);
      return value;
    });
  return {
    ...spec,
    pattern,
    matches: (path) => re.test(path),
    key: (params = {}) => spec.objectKey ?? fill(params).replace(/^\/+/, ''),
    cacheControl: cacheControl(spec.cache),
    samplePath: fill(SAMPLE_PARAMETERS),
  };
}

/** Canonical JSON bytes of a document: stable key order as rendered, two-space indent, trailing newline. */
export const jsonBytes = (doc: unknown) => `${JSON.stringify(doc, null, 2)}\n`;
