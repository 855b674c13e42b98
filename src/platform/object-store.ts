import { createWriteStream, mkdirSync, rmSync } from 'node:fs';
import { type FileHandle, mkdir, open, rename, rm } from 'node:fs/promises';
import { createHash, randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import type { Logger } from './logger.js';
import { freePort } from './net.js';
import { quietAwsNodeVersionWarning } from './node-warnings.js';
import { signedPut } from './signed-put.js';

export interface StoredObject {
  body: Buffer;
  contentType: string;
  cacheControl: string | undefined;
  etag: string;
  lastModified: Date | undefined;
}

export interface PutOptions {
  contentType: string;
  cacheControl: string;
}

/** The bucket the workers publish crawlable documents into; keys are public paths without the leading slash. */
export interface ObjectStore {
  bucket: string;
  endpoint: string;
  embedded: boolean;
  put(key: string, body: Buffer | string, opts: PutOptions): Promise<{ etag: string }>;
  get(key: string): Promise<StoredObject | null>;
  delete(key: string): Promise<void>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** Longest a read of one object may take, retries included. */
const READ_TIMEOUT_MS = 3_000;
/** After a failed read, further reads fail at once for this long instead of each waiting on the bucket. */
const UNAVAILABLE_FOR_MS = 2_000;

/** The bucket could not be read (down, unreachable, or too slow); a missing object is not this. */
export class BucketUnavailableError extends Error {
  constructor(options?: { cause?: unknown }) {
    super('The bucket could not be read', options);
    this.name = 'BucketUnavailableError';
  }
}

export interface ObjectStoreOptions {
  endpoint?: string;
  region: string;
  bucket: string;
  accessKeyId?: string;
  secretAccessKey?: string;
  forcePathStyle: boolean;
  /** Directory for the embedded s3rver; used only without an endpoint. */
  embeddedDir: string;
  log: Logger;
}

/**
 * S3, R2 or MinIO through the AWS SDK; without an endpoint, an in-process s3rver on a loopback
 * port. The checksum settings matter: with the SDK's default (WHEN_SUPPORTED) streamed bodies
 * reach s3rver with aws-chunked framing it stores verbatim, corrupting the object.
 */
export async function openObjectStore(opts: ObjectStoreOptions): Promise<ObjectStore> {
  quietAwsNodeVersionWarning();
  let endpoint = opts.endpoint;
  let stopEmbedded: (() => Promise<void>) | undefined;
  let credentials =
    opts.accessKeyId && opts.secretAccessKey
      ? { accessKeyId: opts.accessKeyId, secretAccessKey: opts.secretAccessKey }
      : undefined;
  if (!endpoint) {
    const started = await startS3rver(opts.embeddedDir, opts.bucket);
    endpoint = started.endpoint;
    stopEmbedded = started.stop;
    credentials = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };
    opts.log.info({ endpoint, dir: opts.embeddedDir }, 'embedded s3rver object store started');
  }
  const client = new S3Client({
    endpoint,
    region: opts.region,
    forcePathStyle: opts.forcePathStyle,
    credentials,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    // A bucket that accepts connections and never answers must not hold a read or a publish forever.
    requestHandler: { connectionTimeout: 2_000, requestTimeout: 10_000 },
  });
  const bucket = opts.bucket;
  if (stopEmbedded) await ensureBucket(client, bucket);
  let unavailableUntil = 0;
  // Puts are the recompute's hot path: signed and sent directly when the keys are given; without
  // them (credentials from the environment's provider chain) through the SDK.
  const direct =
    endpoint && credentials
      ? signedPut({
          endpoint,
          region: opts.region,
          bucket,
          forcePathStyle: opts.forcePathStyle,
          credentials,
          maxSockets: 32,
          requestTimeoutMs: 10_000,
        })
      : undefined;

  return {
    bucket,
    endpoint,
    embedded: Boolean(stopEmbedded),
    async put(key, body, { contentType, cacheControl }) {
      if (direct)
        return direct.put(key, typeof body === 'string' ? Buffer.from(body) : body, {
          'content-type': contentType,
          'cache-control': cacheControl,
        });
      const out = await client.send(
        new PutObjectCommand({
          Bucket: bucket,
          Key: key,
          Body: body,
          ContentType: contentType,
          CacheControl: cacheControl,
        }),
      );
      return { etag: out.ETag ?? '' };
    },
    async get(key) {
      // Reads answer people waiting: a bucket that just failed is not asked again for a moment, and
      // a read (with the SDK's retries) gives up after READ_TIMEOUT_MS rather than its request timeout.
      if (Date.now() < unavailableUntil) throw new BucketUnavailableError();
      try {
        const out = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }), {
          abortSignal: AbortSignal.timeout(READ_TIMEOUT_MS),
        });
        const bytes = (await out.Body?.transformToByteArray()) ?? new Uint8Array();
        return {
          body: Buffer.from(bytes),
          contentType: out.ContentType ?? 'application/octet-stream',
          cacheControl: out.CacheControl,
          etag: out.ETag ?? '',
          lastModified: out.LastModified,
        };
      } catch (err) {
        if (err instanceof S3ServiceException && (err.name === 'NoSuchKey' || err.$metadata.httpStatusCode === 404)) {
          return null;
        }
        unavailableUntil = Date.now() + UNAVAILABLE_FOR_MS;
        throw new BucketUnavailableError({ cause: err });
      }
    },
    async delete(key) {
      await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
    },
    async ping() {
      await client.send(new HeadBucketCommand({ Bucket: bucket }));
    },
    async close() {
      direct?.close();
      client.destroy();
      await stopEmbedded?.();
    },
  };
}

async function ensureBucket(client: S3Client, bucket: string): Promise<void> {
  try {
    await client.send(new HeadBucketCommand({ Bucket: bucket }));
  } catch {
    await client.send(new CreateBucketCommand({ Bucket: bucket }));
  }
}

export async function startS3rver(
  dir: string,
  bucket: string,
  atPort?: number,
): Promise<{ endpoint: string; stop: () => Promise<void> }> {
  const { default: S3rver } = await import('s3rver');
  mkdirSync(dir, { recursive: true });
  const port = atPort ?? (await freePort());
  const server = new S3rver({
    port,
    address: '127.0.0.1',
    directory: join(dir),
    silent: true,
    configureBuckets: [{ name: bucket, configs: [] }],
  });
  // Partial writes go beside the bucket directory (same filesystem, so a rename moves them in):
  // inside it, s3rver would list the folder as a bucket, or trip over a file renamed while it lists.
  const partials = `${resolve(dir)}.partial`;
  rmSync(partials, { recursive: true, force: true });
  mkdirSync(partials, { recursive: true });
  replaceObjectsAtomically(filesystemStoreOf(server), partials);
  await server.run();
  return {
    endpoint: `http://127.0.0.1:${port}`,
    async stop() {
      await server.close();
      rmSync(partials, { recursive: true, force: true });
    },
  };
}

/** The parts of s3rver's filesystem store (s3rver/lib/stores/filesystem.js) the wrapper below uses. */
interface FilesystemStore {
  getResourcePath(bucket: string, key: string, resource: string): string;
  getMetadata(bucket: string, key: string): Promise<Record<string, unknown>>;
  putMetadata(bucket: string, key: string, metadata: unknown, md5: string): Promise<void>;
  putObject(object: {
    bucket: string;
    key: string;
    content: Buffer | Readable;
    metadata: unknown;
  }): Promise<{ size: number; md5: string }>;
  getObject(bucket: string, key: string, options?: { start?: number; end?: number }): Promise<unknown>;
}

/** s3rver's store is not in its types; this checks it is the filesystem store the wrapper expects. */
function filesystemStoreOf(server: object): FilesystemStore {
  const store: unknown = Reflect.get(server, 'store');
  const methods = ['getResourcePath', 'getMetadata', 'putMetadata', 'putObject', 'getObject'] as const;
  const isStore = (s: unknown): s is FilesystemStore =>
    typeof s === 'object' && s !== null && methods.every((m) => typeof Reflect.get(s, m) === 'function');
  if (!isStore(store)) throw new Error('s3rver has no filesystem store: the embedded bucket needs s3rver 3.7');
  return store;
}

/**
 * s3rver writes an object's file in place. Two PUTs of one key at once (an agent's event job and a
 * page of the full recompute publishing the same score.json) interleaved, and the file kept the
 * tail of the longer version after the shorter one (seen in CI: a score.json with bytes after its
 * end, served until the next write); a GET during a PUT could read half a file. S3 replaces an
 * object atomically, and so does our embedded bucket now: each PUT writes a file of its own and
 * renames it over the object, and a GET reads the file it opened whole, with the length and ETag
 * of those bytes (ranged GETs, which we never send, keep s3rver's own path).
 */
function replaceObjectsAtomically(store: FilesystemStore, partials: string) {
  const S3Object = createRequire(import.meta.url)('s3rver/lib/models/object.js') as new (
    bucket: string,
    key: string,
    content: unknown,
    metadata: Record<string, unknown>,
  ) => unknown;
  // The rename and the metadata (ETag, content type) of one object are written one PUT at a time,
  // so they always describe the same bytes.
  const turns = new Map<string, Promise<unknown>>();
  const inTurn = <T>(path: string, step: () => Promise<T>): Promise<T> => {
    const run = (turns.get(path) ?? Promise.resolve()).then(step, step);
    const settled = run.catch(() => undefined);
    turns.set(path, settled);
    void settled.then(() => turns.get(path) === settled && turns.delete(path));
    return run;
  };
  store.putObject = async (object) => {
    const path = store.getResourcePath(object.bucket, object.key, 'object');
    await mkdir(dirname(path), { recursive: true });
    const partial = join(partials, randomBytes(12).toString('hex'));
    const md5 = createHash('md5');
    let size = 0;
    const count = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        md5.update(chunk);
        size += chunk.length;
        callback(null, chunk);
      },
    });
    try {
      await pipeline(
        Buffer.isBuffer(object.content) ? Readable.from([object.content]) : object.content,
        count,
        createWriteStream(partial),
      );
    } catch (err) {
      await rm(partial, { force: true });
      throw err;
    }
    const digest = md5.digest('hex');
    await inTurn(path, async () => {
      await rename(partial, path);
      await store.putMetadata(object.bucket, object.key, object.metadata, digest);
    });
    return { size, md5: digest };
  };
  const rangedGet = store.getObject.bind(store);
  store.getObject = async (bucket, key, options) => {
    if (options && (options.start !== undefined || options.end !== undefined)) return rangedGet(bucket, key, options);
    let file: FileHandle | undefined;
    try {
      const metadata = await store.getMetadata(bucket, key);
      // Size, time and bytes all of the one file opened (a PUT may rename another over the path meanwhile).
      file = await open(store.getResourcePath(bucket, key, 'object'));
      const [stat, content] = [await file.stat(), await file.readFile()];
      return new S3Object(bucket, key, Readable.from([content]), {
        ...metadata,
        'content-length': content.length,
        'last-modified': stat.mtime.toUTCString(),
        etag: JSON.stringify(createHash('md5').update(content).digest('hex')),
      });
    } catch (err) {
      if ((err as { code?: string }).code === 'ENOENT') return null;
      throw err;
    } finally {
      await file?.close();
    }
  };
}
