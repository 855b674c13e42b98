import { createHash, createHmac } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import { setTimeout } from 'node:timers/promises';
import { SignatureV4 } from '@smithy/signature-v4';

type SourceData = string | ArrayBuffer | ArrayBufferView;
const bytesOf = (data: SourceData) =>
  typeof data === 'string'
    ? data
    : data instanceof ArrayBuffer
      ? new Uint8Array(data)
      : new Uint8Array(data.buffer, data.byteOffset, data.byteLength);

/** SHA-256 (or its HMAC with a key) for the signer, from node:crypto. */
class NodeSha256 {
  private readonly hash;
  constructor(secret?: SourceData) {
    this.hash = secret === undefined ? createHash('sha256') : createHmac('sha256', bytesOf(secret));
  }
  update(data: SourceData): void {
    this.hash.update(bytesOf(data));
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.hash.digest());
  }
}

/**
 * A path segment as SigV4's canonical URI has it: every byte but RFC 3986's unreserved characters
 * percent-encoded (encodeURIComponent leaves !'()* as they are).
 */
const uriEncode = (segment: string) =>
  encodeURIComponent(segment).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

export interface SignedPutOptions {
  endpoint: string;
  region: string;
  bucket: string;
  forcePathStyle: boolean;
  credentials: { accessKeyId: string; secretAccessKey: string };
  /** Bucket writes one client keeps open at once. */
  maxSockets: number;
  requestTimeoutMs: number;
}

/** The bucket's answer to a put that was not a success. */
export class PutFailedError extends Error {
  constructor(
    readonly key: string,
    readonly status: number,
    body: string,
  ) {
    super(`put ${key}: HTTP ${status} ${body.slice(0, 300)}`);
    this.name = 'PutFailedError';
  }
}

/** Tries of one put: a put is idempotent, so a dropped connection or a bucket's 5xx is tried again. */
const PUT_ATTEMPTS = 3;
const RETRY_BASE_MS = 25;

/**
 * Worth another try: the bucket's transient statuses, and a connection that failed under the
 * request (a kept-alive socket the server closed as it was reused answers ECONNRESET).
 */
function retryable(outcome: Error | { status: number }): boolean {
  if (!(outcome instanceof Error)) return outcome.status >= 500 || outcome.status === 429;
  const code = (outcome as NodeJS.ErrnoException).code;
  return code === 'ECONNRESET' || code === 'EPIPE' || code === 'ECONNREFUSED' || /socket hang up/.test(outcome.message);
}

/**
 * PutObject as one SigV4-signed HTTP request on kept-alive connections: what the recompute does
 * nine times an agent. The AWS SDK's put costs about 1.5 ms of CPU in its middleware; this costs a
 * fraction of it for the same request (docs/benchmarks.md).
 */
export function signedPut(opts: SignedPutOptions) {
  const base = new URL(opts.endpoint);
  const secure = base.protocol === 'https:';
  const agent = new (secure ? https : http).Agent({ keepAlive: true, maxSockets: opts.maxSockets });
  const signer = new SignatureV4({
    service: 's3',
    region: opts.region,
    credentials: opts.credentials,
    sha256: NodeSha256,
    uriEscapePath: false,
  });
  // One request; its status, ETag and body text, or the network error.
  const send = (path: string, headers: Record<string, string>, body: Buffer) =>
    new Promise<{ status: number; etag: string; text: string }>((resolve, reject) => {
      const req = (secure ? https : http).request(
        {
          agent,
          method: 'PUT',
          host: base.hostname,
          port: base.port || undefined,
          path,
          headers,
          timeout: opts.requestTimeoutMs,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              etag: String(res.headers.etag ?? ''),
              text: Buffer.concat(chunks).toString('utf8'),
            }),
          );
          res.on('error', reject);
        },
      );
      req.on('timeout', () => req.destroy(new Error(`put ${path}: no answer in ${opts.requestTimeoutMs} ms`)));
      req.on('error', reject);
      req.end(body);
    });
  const hostname = opts.forcePathStyle ? base.hostname : `${opts.bucket}.${base.hostname}`;
  const basePath = base.pathname.replace(/\/$/, '');
  return {
    async put(key: string, body: Buffer, headers: Record<string, string>): Promise<{ etag: string }> {
      const encodedKey = key.split('/').map(uriEncode).join('/');
      const path = opts.forcePathStyle ? `${basePath}/${opts.bucket}/${encodedKey}` : `${basePath}/${encodedKey}`;
      const signed = await signer.sign({
        method: 'PUT',
        protocol: base.protocol,
        hostname,
        port: base.port ? Number(base.port) : undefined,
        path,
        query: {},
        headers: {
          host: base.port ? `${hostname}:${base.port}` : hostname,
          'content-length': String(body.length),
          'x-amz-content-sha256': createHash('sha256').update(body).digest('hex'),
          ...headers,
        },
        body,
      });
      for (let attempt = 1; ; attempt++) {
        const outcome = await send(path, signed.headers as Record<string, string>, body).catch((err: Error) => err);
        if (!(outcome instanceof Error) && outcome.status >= 200 && outcome.status < 300) return { etag: outcome.etag };
        const failure = outcome instanceof Error ? outcome : new PutFailedError(key, outcome.status, outcome.text);
        if (attempt >= PUT_ATTEMPTS || !retryable(outcome)) throw failure;
        await setTimeout(RETRY_BASE_MS * 4 ** (attempt - 1));
      }
    },
    close: () => agent.destroy(),
  };
}
