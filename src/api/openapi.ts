import { z } from 'zod';
import { openApiPath, type AnyRoute, type PaymentPrice } from './http/route.js';
import { ProblemSchema, PROBLEM_CONTENT_TYPE } from './http/problem.js';
import { documentAtTemplate } from '../documents/catalog.js';
import type { AnyPublishedDocument } from '../documents/document.js';

export const API_VERSION = '1.0.0';

type JsonSchema = Record<string, unknown>;

const toSchema = (schema: z.ZodType, io: 'input' | 'output'): JsonSchema => {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, {
    io,
    unrepresentable: 'any',
    reused: 'inline',
  }) as JsonSchema;
  return rest;
};

function parametersOf(schema: z.ZodType | undefined, where: 'path' | 'query') {
  if (!schema) return [];
  const json = toSchema(schema, 'input') as { properties?: Record<string, JsonSchema>; required?: string[] };
  return Object.entries(json.properties ?? {}).map(([name, prop]) => ({
    name,
    in: where,
    required: where === 'path' || (json.required ?? []).includes(name),
    description: prop.description,
    schema: prop,
  }));
}

const SECURITY_SCHEMES = {
  bearerJwt: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description: 'Agent JWT from POST /api/agents/verify',
  },
  x402: {
    type: 'http',
    scheme: 'x402',
    description:
      'Pay per request in USDC with an EIP-3009 TransferWithAuthorization. Unpaid requests get 402 with the requirements; ' +
      'retry with X-PAYMENT (x402 v1) or PAYMENT-SIGNATURE (x402 v2).',
  },
  adminToken: {
    type: 'http',
    scheme: 'bearer',
    description: 'Operator token (ADMIN_TOKEN); also accepted as the Basic password',
  },
};

/**
 * OpenAPI 3.1 generated from the same route objects that are mounted, so the document lists
 * exactly what is served with exactly the schemas that validate it.
 */
export function buildOpenApi(routes: AnyRoute[], baseUrl: string) {
  const paths: Record<string, Record<string, unknown>> = {};
  const documentSchemas: Record<string, JsonSchema> = {};
  for (const route of routes) {
    const responses: Record<string, unknown> = {};
    // A static document's body is described by its catalogue entry: the same schema publishing checks.
    const document = route.staticDocument ? documentAtTemplate(openApiPath(route.path)) : undefined;
    if (route.staticDocument && !document)
      throw new Error(`static document route ${route.path} is not in the catalogue`);
    for (const [status, spec] of Object.entries(route.responses)) {
      const content =
        document && status === '200'
          ? documentContent(document, documentSchemas)
          : spec.schema
            ? { [spec.contentType ?? 'application/json']: { schema: toSchema(spec.schema, 'output') } }
            : spec.contentType
              ? { [spec.contentType]: {} }
              : undefined;
      responses[status] = {
        description: spec.description,
        ...(content ? { content } : {}),
        ...(spec.headers
          ? {
              headers: Object.fromEntries(
                Object.entries(spec.headers).map(([h, d]) => [h, { description: d, schema: { type: 'string' } }]),
              ),
            }
          : {}),
      };
    }
    if (route.rateLimit && !responses['429']) {
      responses['429'] = {
        description: `Too many ${route.rateLimit} requests from this address (problem+json rate_limited); retry after Retry-After seconds`,
        headers: { 'Retry-After': { description: 'seconds', schema: { type: 'string' } } },
      };
    }
    responses.default = {
      description: 'Error (RFC 9457 problem details)',
      content: { [PROBLEM_CONTENT_TYPE]: { schema: { $ref: '#/components/schemas/Problem' } } },
    };
    const operation: Record<string, unknown> = {
      operationId: route.operationId,
      summary: route.summary,
      ...(route.description ? { description: route.description } : {}),
      tags: route.tags,
      parameters: [...parametersOf(route.params, 'path'), ...parametersOf(route.query, 'query')],
      responses,
      ...(route.security ? { security: route.security.map((s) => ({ [s]: [] })) } : {}),
      ...(route.staticDocument ? { 'x-static-document': true } : {}),
      ...(route.price ? { 'x-payment-info': paymentInfo(route.price) } : {}),
    };
    if (route.body) {
      operation.requestBody = {
        // A body the route also accepts absent (an optional one) is documented as optional.
        required: !route.body.safeParse(undefined).success,
        content: { 'application/json': { schema: toSchema(route.body, 'input') } },
      };
    }
    const path = openApiPath(route.path);
    const operations = paths[path] ?? {};
    operations[route.method] = operation;
    paths[path] = operations;
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Skill Market API',
      version: API_VERSION,
      description:
        'The skill marketplace for software agents. Read-only endpoints are CORS-open and cacheable; operations marked ' +
        'x-static-document are also published as objects at the same path (served by the CDN when requested without a query string).',
    },
    servers: [{ url: baseUrl }],
    paths,
    components: {
      schemas: { Problem: toSchema(ProblemSchema, 'output'), ...documentSchemas },
      securitySchemes: SECURITY_SCHEMES,
    },
  };
}

/** A paid operation's `x-payment-info`, as x402 crawlers (x402scan) read it. */
function paymentInfo(price: PaymentPrice) {
  return {
    price:
      price.mode === 'fixed'
        ? { mode: 'fixed', currency: 'USD', amount: price.amount }
        : { mode: 'dynamic', currency: 'USD', min: price.min, max: price.max },
    protocols: [{ x402: {} }],
  };
}

/**
 * The 200 content of a catalogued document: its media type, and its schema as a component named
 * after the document (added to `schemas` the first time).
 */
function documentContent(document: AnyPublishedDocument, schemas: Record<string, JsonSchema>) {
  const mediaType = document.contentType.split(';')[0]?.trim() ?? document.contentType;
  if (!document.schema) return { [mediaType]: {} };
  schemas[document.id] = document.schema;
  return { [mediaType]: { schema: { $ref: `#/components/schemas/${document.id}` } } };
}
