import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
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
  let credentials = opts.accessKeyId && opts.secretAccessKey
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
  });
  const bucket = opts.bucket;
  if (stopEmbedded) await ensureBucket(client, bucket);

  return {
    bucket,
    endpoint,
    embedded: Boolean(stopEmbedded),
    async put(key, body, { contentType, cacheControl }) {
      const out = await client.send(
        new PutObjectCommand({ Bucket: bucket, Key: key, Body: body, ContentType: contentType, CacheControl: cacheControl }),
      );
      return { etag: out.ETag ?? '' };
    },
    async get(key) {
      try {
        const out = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
        const bytes = await out.Body!.transformToByteArray();
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
        throw err;
      }
    },
    async delete(key) {
      await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
    },
    async ping() {
      await client.send(new HeadBucketCommand({ Bucket: bucket }));
    },
    async close() {
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

export async function startS3rver(dir: string, bucket: string): Promise<{ endpoint: string; stop: () => Promise<void> }> {
  const { default: S3rver } = await import('s3rver');
  mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const server = new S3rver({
    port,
    address: '127.0.0.1',
    directory: join(dir),
    silent: true,
    configureBuckets: [{ name: bucket, configs: [] }],
  });
  await server.run();
  return { endpoint: `http://127.0.0.1:${port}`, stop: () => server.close() };
}
