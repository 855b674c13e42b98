import fc from 'fast-check';

/**
 * Request generators for fuzzing the API from its own OpenAPI document: values that follow each
 * parameter's schema, values that break it, and values that are hostile to what sits behind the
 * validation (PostgreSQL's text, dates and numbers; URL decoding; JSON; base64 headers).
 */

type JsonSchema = {
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  minimum?: number;
  maximum?: number;
  format?: string;
  default?: unknown;
};

export interface Operation {
  method: string;
  /** OpenAPI path template, e.g. /api/posts/{postId}. */
  path: string;
  operationId: string;
  pathParams: Array<{ name: string; schema: JsonSchema }>;
  queryParams: Array<{ name: string; schema: JsonSchema; required: boolean }>;
  body?: JsonSchema;
  paid: boolean;
  bearer: boolean;
}

export interface FuzzRequest {
  method: string;
  /** Already encoded path and query, exactly as sent on the request line. */
  target: string;
  headers: Record<string, string>;
  body?: Buffer;
  operationId: string;
}

/** Every operation of an OpenAPI document, with what the fuzzer needs of it. */
export function operationsOf(doc: { paths: Record<string, Record<string, any>> }): Operation[] {
  const ops: Operation[] = [];
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const params = (op.parameters ?? []) as Array<{
        name: string;
        in: string;
        schema: JsonSchema;
        required?: boolean;
      }>;
      const security = (op.security ?? []) as Array<Record<string, unknown>>;
      ops.push({
        method: method.toUpperCase(),
        path,
        operationId: op.operationId,
        pathParams: params.filter((p) => p.in === 'path').map((p) => ({ name: p.name, schema: p.schema })),
        queryParams: params
          .filter((p) => p.in === 'query')
          .map((p) => ({ name: p.name, schema: p.schema, required: Boolean(p.required) })),
        body: op.requestBody?.content?.['application/json']?.schema,
        paid: security.some((s) => 'x402' in s),
        bearer: security.some((s) => 'bearerJwt' in s),
      });
    }
  }
  return ops;
}

/** Strings that have broken services like this one: storage, decoding, parsing, injection. */
const NASTY_STRINGS = [
  '',
  ' ',
  '\u0000',
  'abc\u0000def',
  '\uD800',
  'x\uDC00y',
  '\uD83D',
  '\uDE00\uD83D',
  '%',
  '%zz',
  '%E0%A4%A',
  '%00',
  '%ED%A0%80',
  '../../etc/passwd',
  '..%2F..%2F',
  "'; DROP TABLE agents; --",
  '<script>alert(1)</script>',
  '\u202Egnp.exe',
  '𝕏'.repeat(40),
  'a'.repeat(5000),
  '-1',
  '0',
  '1e309',
  '-1e309',
  'NaN',
  'Infinity',
  '9'.repeat(400),
  `0x${'f'.repeat(64)}`,
  `0x${'f'.repeat(40)}`,
  '0000-00-00T00:00:00Z',
  '0000-01-01T00:00:00Z',
  '2026-02-30T00:00:00Z',
  '2026-13-01T00:00:00Z',
  '9999-12-31T23:59:59.999999+99:99',
  '275760-09-13T00:00:00Z',
  '-000001-01-01T00:00:00Z',
  '1969-12-31T23:59:59Z',
  '00000000-0000-0000-0000-000000000000',
  'ffffffff-ffff-ffff-ffff-ffffffffffff',
  '１２３',
  'null',
  'true',
  '[]',
  '{}',
  '__proto__',
  'constructor',
  '\r\n',
  '\t',
  'ǅ',
];

export const nastyString = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...NASTY_STRINGS) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 40 }) },
  { weight: 2, arbitrary: fc.string({ maxLength: 40 }) },
);

const nastyNumber = fc.oneof(
  fc.constantFrom(-1, 0, -0, 1.5, 2 ** 31, 2 ** 53, 2 ** 64, 1e308, -1e308, Number.MIN_VALUE),
  fc.integer(),
  fc.double(),
);

/** Any JSON value, hostile strings included. */
export const nastyJson: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    nastyString,
    nastyNumber,
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(fc.oneof(nastyString, fc.string({ maxLength: 10 })), tie('value'), { maxKeys: 4 }),
  ),
})).value;

function typesOf(schema: JsonSchema): string[] {
  if (schema.type) return Array.isArray(schema.type) ? schema.type : [schema.type];
  return [];
}

/** A value that follows `schema`. */
export function conformingValue(schema: JsonSchema | undefined, depth = 0): fc.Arbitrary<unknown> {
  if (!schema || depth > 4) return nastyJson;
  const alternatives = schema.anyOf ?? schema.oneOf;
  return (() => {
    if (schema.const !== undefined) return fc.constant(schema.const);
    if (schema.enum) return fc.constantFrom(...schema.enum);
    if (alternatives?.length) return fc.oneof(...alternatives.map((s) => conformingValue(s, depth + 1)));
    const type = typesOf(schema)[0];
    switch (type) {
      case 'integer':
        return fc.integer({ min: Math.max(schema.minimum ?? -1000, -1e9), max: Math.min(schema.maximum ?? 1000, 1e9) });
      case 'number':
        return fc.double({ min: schema.minimum ?? -1e6, max: schema.maximum ?? 1e6, noNaN: true });
      case 'boolean':
        return fc.boolean();
      case 'array':
        return fc.array(conformingValue(schema.items, depth + 1), { maxLength: 4 });
      case 'object': {
        const props = schema.properties ?? {};
        const required = new Set(schema.required ?? []);
        const model: Record<string, fc.Arbitrary<unknown>> = {};
        for (const [k, s] of Object.entries(props)) model[k] = conformingValue(s, depth + 1);
        return fc.record(model, { requiredKeys: [...required].filter((k) => k in props) });
      }
      case 'string':
        if (schema.format === 'date-time')
          return fc
            .date({ min: new Date('1970-01-02'), max: new Date('2100-01-01'), noInvalidDate: true })
            .map((d) => d.toISOString());
        return fc.string({ maxLength: 30 });
      default:
        return nastyJson;
    }
  })();
}

/** A value that follows `schema` (often) or breaks it (sometimes, at any depth), hostile strings mixed in. */
export function valueFor(schema: JsonSchema | undefined, depth = 0): fc.Arbitrary<unknown> {
  if (!schema || depth > 4) return nastyJson;
  const props = schema.properties;
  const shaped =
    typesOf(schema)[0] === 'object' && props
      ? fc.record(Object.fromEntries(Object.entries(props).map(([k, s]) => [k, valueFor(s, depth + 1)])), {
          requiredKeys: (schema.required ?? []).filter((k) => k in props),
        })
      : conformingValue(schema, depth);
  return fc.oneof(
    { weight: 3, arbitrary: shaped as fc.Arbitrary<unknown> },
    { weight: 2, arbitrary: nastyString },
    { weight: 1, arbitrary: nastyJson },
  );
}

/**
 * Percent-encodes every UTF-16 code unit, lone surrogates included (as their WTF-8 bytes, which
 * are not valid UTF-8 and must be refused by the decoder, not crash it).
 */
export function percentEncode(text: string): string {
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    const next = text.charCodeAt(i + 1);
    let codePoint = unit;
    if (unit >= 0xd800 && unit <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
      codePoint = 0x10000 + ((unit - 0xd800) << 10) + (next - 0xdc00);
      i++;
    }
    if (codePoint < 0x80 && /[A-Za-z0-9._~-]/.test(String.fromCharCode(codePoint))) {
      out += String.fromCharCode(codePoint);
      continue;
    }
    for (const byte of utf8Bytes(codePoint)) out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

function utf8Bytes(cp: number): number[] {
  if (cp < 0x80) return [cp];
  if (cp < 0x800) return [0xc0 | (cp >> 6), 0x80 | (cp & 63)];
  if (cp < 0x10000) return [0xe0 | (cp >> 12), 0x80 | ((cp >> 6) & 63), 0x80 | (cp & 63)];
  return [0xf0 | (cp >> 18), 0x80 | ((cp >> 12) & 63), 0x80 | ((cp >> 6) & 63), 0x80 | (cp & 63)];
}

/** How a value is written into a path segment or a query value: encoded, or raw and malformed. */
const urlText = (value: unknown): fc.Arbitrary<string> => {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? '');
  return fc.oneof(
    { weight: 6, arbitrary: fc.constant(percentEncode(text)) },
    { weight: 1, arbitrary: fc.constantFrom('%', '%G0', '%E0%A4%A', '%ED%A0%80', '%C0%AF', '%FF', '%25%', '%u0041') },
  );
};

/** Header-safe junk: visible ASCII, which any HTTP client can send. */
const headerJunk = fc.string({
  unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
  maxLength: 120,
});
const b64 = (value: unknown) =>
  Buffer.from(typeof value === 'string' ? value : (JSON.stringify(value) ?? 'null'), 'utf8').toString('base64');
const b64url = (value: unknown) => b64(value).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');

const hex = (bytes: number) =>
  fc.uint8Array({ minLength: bytes, maxLength: bytes }).map((a) => `0x${Buffer.from(a).toString('hex')}`);
const maybeNasty = <T>(arb: fc.Arbitrary<T>) =>
  fc.oneof({ weight: 3, arbitrary: arb as fc.Arbitrary<unknown> }, { weight: 1, arbitrary: nastyJson });
const uintText = fc.oneof(
  fc.bigInt({ min: 0n, max: 2n ** 256n - 1n }).map(String),
  fc.constantFrom(
    '0',
    '1',
    '-1',
    '1e6',
    '0x10',
    ' 5',
    '99999999999999999999999999999999999999999999999999999999999999999999999999999999',
    '18446744073709551616',
    '9007199254740993',
    '253402300800',
    '-62135596800',
  ),
);

/** EIP-3009 authorizations that look right to a parser and are wrong in every other way. */
export function paymentHeaderValue(opts: {
  payTo: string;
  asset: string;
  network: string;
  amount: string;
}): fc.Arbitrary<[string, string]> {
  const nowS = Math.floor(Date.now() / 1000);
  const authorization = fc.record({
    from: maybeNasty(hex(20)),
    to: maybeNasty(fc.constantFrom(opts.payTo, '0x0000000000000000000000000000000000000000')),
    value: maybeNasty(fc.oneof(fc.constant(opts.amount), uintText)),
    validAfter: maybeNasty(fc.oneof(fc.constant(String(nowS - 60)), uintText, fc.integer().map(String))),
    validBefore: maybeNasty(fc.oneof(fc.constant(String(nowS + 300)), uintText, fc.integer().map(String))),
    nonce: maybeNasty(hex(32)),
  });
  const inner = fc.record({ signature: maybeNasty(hex(65)), authorization: maybeNasty(authorization) });
  const v2 = fc.record({
    x402Version: maybeNasty(fc.constant(2)),
    accepted: maybeNasty(
      fc.record({
        scheme: maybeNasty(fc.constant('exact')),
        network: maybeNasty(fc.constant(opts.network)),
        asset: maybeNasty(fc.constant(opts.asset)),
        amount: maybeNasty(fc.constant(opts.amount)),
        payTo: maybeNasty(fc.constant(opts.payTo)),
        maxTimeoutSeconds: maybeNasty(fc.constant(300)),
        extra: maybeNasty(fc.constant({ name: 'USDC', version: '2' })),
      }),
    ),
    payload: maybeNasty(inner),
    resource: maybeNasty(fc.record({ url: fc.webUrl() })),
  });
  const v1 = fc.record({
    x402Version: maybeNasty(fc.constant(1)),
    scheme: maybeNasty(fc.constant('exact')),
    network: maybeNasty(fc.constantFrom('base-sepolia', 'base')),
    payload: maybeNasty(inner),
  });
  return fc.oneof(
    v2.map((p) => ['payment-signature', b64(p)] as [string, string]),
    v1.map((p) => ['x-payment', b64(p)] as [string, string]),
    fc.tuple(fc.constantFrom('payment-signature', 'x-payment'), fc.oneof(headerJunk, nastyJson.map(b64))),
  );
}

/** Bearer tokens: the real one, and three-part junk whose segments are not JSON, or not ours. */
export function authorizationValue(validToken: string): fc.Arbitrary<string> {
  const segment = fc.oneof(nastyJson.map(b64url), headerJunk.map(b64url), headerJunk, fc.constant(''));
  return fc.oneof(
    { weight: 2, arbitrary: fc.constant(`Bearer ${validToken}`) },
    { weight: 3, arbitrary: fc.tuple(segment, segment, segment).map((parts) => `Bearer ${parts.join('.')}`) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(
          fc.constantFrom(
            { alg: 'none' },
            { alg: 'ES256', kid: '__proto__' },
            { alg: 'ES256', kid: { a: 1 } },
            { alg: 'HS256' },
          ),
          nastyJson,
        )
        .map(([h, p]) => `Bearer ${b64url(h)}.${b64url(p)}.`),
    },
    { weight: 1, arbitrary: headerJunk },
    {
      weight: 1,
      arbitrary: fc.tuple(fc.constantFrom('Bearer', 'Basic', 'bearer'), headerJunk).map(([s, v]) => `${s} ${v}`),
    },
  );
}

export interface FuzzContext {
  /** Values that exist (a real handle, post id, payment id), so requests reach past lookups. */
  known: Record<string, string[]>;
  token: string;
  payment: { payTo: string; asset: string; network: string; amount: string };
  /** Every method served on each path template, to generate wrong-method requests. */
  methodsByPath: Map<string, Set<string>>;
}

const ALL_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];

/**
 * A well-formed request for `op`: the declared method, known ids, each parameter once with a value
 * its schema allows, a JSON body that follows the schema, the agent's own token half the time where
 * the operation takes one, and a structured (but unpaid-for) payment header half the time. These reach
 * past validation into the use cases, where hostile requests mostly stop.
 */
export function wellFormedRequestFor(op: Operation, ctx: FuzzContext): fc.Arbitrary<FuzzRequest> {
  const pathValues = op.pathParams.map((p) => {
    const known = ctx.known[p.name] ?? [];
    return (
      known.length
        ? fc.constantFrom(...known)
        : conformingValue(p.schema).map((v) => (typeof v === 'string' ? v : JSON.stringify(v)))
    ).map((v) => percentEncode(String(v)));
  });
  const query = fc
    .subarray(op.queryParams)
    .chain((params) =>
      fc.tuple(
        ...params.map((p) =>
          conformingValue(p.schema).map(
            (v) => [p.name, percentEncode(typeof v === 'string' ? v : (JSON.stringify(v) ?? ''))] as [string, string],
          ),
        ),
      ),
    );
  const payment = fc.option(paymentHeaderValue(ctx.payment), { freq: 2 });
  const body = op.body ? conformingValue(op.body) : fc.constant(undefined);
  const signedIn = op.bearer ? fc.boolean() : fc.constant(false);
  return fc
    .record({ pathValues: fc.tuple(...pathValues), query, payment, body, signedIn })
    .map(({ pathValues, query, payment, body, signedIn }) => {
      let i = 0;
      const path = op.path.replace(/\{[^}]+\}/g, () => pathValues[i++] ?? '');
      const qs = query.map(([k, v]) => `${k}=${v}`).join('&');
      const headers: Record<string, string> = { accept: 'application/json' };
      if (signedIn) headers.authorization = `Bearer ${ctx.token}`;
      if (payment) headers[payment[0]] = payment[1];
      let bytes: Buffer | undefined;
      if (op.body && body !== undefined) {
        bytes = Buffer.from(JSON.stringify(body));
        headers['content-type'] = 'application/json';
      }
      return {
        method: op.method,
        target: qs ? `${path}?${qs}` : path,
        headers,
        body: bytes,
        operationId: op.operationId,
      };
    });
}

/** One request for `op`: mostly well-aimed, often hostile, sometimes with a method the path does not serve. */
export function requestFor(op: Operation, ctx: FuzzContext): fc.Arbitrary<FuzzRequest> {
  const served = ctx.methodsByPath.get(op.path) ?? new Set([op.method]);
  const wrongMethods = ALL_METHODS.filter((m) => !served.has(m) && !(m === 'HEAD' && served.has('GET')));
  const method = wrongMethods.length
    ? fc.oneof(
        { weight: 12, arbitrary: fc.constant(op.method) },
        { weight: 1, arbitrary: fc.constantFrom(...wrongMethods) },
      )
    : fc.constant(op.method);

  const pathValues = op.pathParams.map((p) => {
    const known = ctx.known[p.name] ?? [];
    const value = known.length
      ? fc.oneof(
          { weight: 2, arbitrary: fc.constantFrom(...known) as fc.Arbitrary<unknown> },
          { weight: 3, arbitrary: valueFor(p.schema) },
        )
      : valueFor(p.schema);
    return value.chain(urlText);
  });
  const query = fc.array(
    fc.oneof(
      ...(op.queryParams.length
        ? [
            {
              weight: 4,
              arbitrary: fc
                .constantFrom(...op.queryParams)
                .chain((p) => fc.tuple(fc.constant(p.name), valueFor(p.schema).chain(urlText))),
            },
          ]
        : []),
      { weight: 1, arbitrary: fc.tuple(nastyString.map(percentEncode), nastyString.chain(urlText)) },
    ),
    { maxLength: 4 },
  );

  const headers = fc.record(
    {
      authorization: authorizationValue(ctx.token),
      payment: paymentHeaderValue(ctx.payment),
      ifNoneMatch: fc.oneof(headerJunk, fc.constant('*'), fc.constant('W/"x", "y"')),
      requestId: headerJunk,
      accept: fc.constantFrom('application/json', 'text/html', '*/*', 'application/problem+json'),
    },
    { requiredKeys: [] },
  );

  const jsonBody = valueFor(op.body).map((v) => ({
    bytes: Buffer.from(JSON.stringify(v) ?? 'null'),
    type: 'application/json',
    encoding: undefined as string | undefined,
  }));
  const otherBody = fc.oneof(
    fc
      .uint8Array({ maxLength: 200 })
      .map((a) => ({ bytes: Buffer.from(a), type: 'application/json', encoding: 'gzip' as string | undefined })),
    fc
      .uint8Array({ maxLength: 200 })
      .map((a) => ({ bytes: Buffer.from(a), type: 'application/json', encoding: undefined as string | undefined })),
    fc.constantFrom('br', 'x-unknown', 'deflate', 'identity').map((encoding) => ({
      bytes: Buffer.from('{"a":1}'),
      type: 'application/json',
      encoding: encoding as string | undefined,
    })),
    fc
      .constantFrom(
        'text/plain',
        'application/x-www-form-urlencoded',
        'application/json; charset=latin1',
        'application/json; charset=utf-16',
        'multipart/form-data; boundary=x',
      )
      .map((type) => ({
        bytes: Buffer.from('{"a":1}'),
        type,
        encoding: undefined as string | undefined,
      })),
    fc.constant({ bytes: Buffer.from('{"a": '), type: 'application/json', encoding: undefined as string | undefined }),
    fc.constant({
      bytes: Buffer.from('"\\ud800"'),
      type: 'application/json',
      encoding: undefined as string | undefined,
    }),
  );
  const body = op.body
    ? fc.option(fc.oneof({ weight: 5, arbitrary: jsonBody }, { weight: 2, arbitrary: otherBody }), { freq: 8 })
    : fc.option(otherBody, { freq: 10 });

  return fc
    .record({ method, pathValues: fc.tuple(...pathValues), query, headers, body })
    .map(({ method, pathValues, query, headers, body }) => {
      let i = 0;
      const path = op.path.replace(/\{[^}]+\}/g, () => pathValues[i++] ?? '');
      const qs = query.map(([k, v]) => `${k}=${v}`).join('&');
      const out: Record<string, string> = { accept: headers.accept ?? '*/*' };
      if (headers.authorization !== undefined) out.authorization = headers.authorization;
      if (headers.payment) out[headers.payment[0]] = headers.payment[1];
      if (headers.ifNoneMatch !== undefined) out['if-none-match'] = headers.ifNoneMatch;
      if (headers.requestId !== undefined) out['x-request-id'] = headers.requestId;
      let bytes: Buffer | undefined;
      if (body && method !== 'GET' && method !== 'HEAD') {
        bytes = body.bytes;
        out['content-type'] = body.type;
        if (body.encoding) out['content-encoding'] = body.encoding;
      }
      return { method, target: qs ? `${path}?${qs}` : path, headers: out, body: bytes, operationId: op.operationId };
    });
}
