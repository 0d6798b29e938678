/**
 * Stored files in an S3-compatible bucket (docs/files.md, "Files in an S3-compatible bucket":
 * `SERVICE_STORAGE=s3://bucket/prefix`, with `SERVICE_S3_ENDPOINT`, `SERVICE_S3_REGION`,
 * `SERVICE_S3_ACCESS_KEY_ID`, `SERVICE_S3_SECRET_ACCESS_KEY`, `SERVICE_S3_FORCE_PATH_STYLE`),
 * through `@aws-sdk/client-s3`.
 *
 * Objects are `<prefix>/<collectionId>/<recordId>/<storedName>`. Downloads read ranges with
 * GetObject `Range`; the object's own ETag is the download's validator; deletes go in batches of
 * up to 1,000 keys. The SDK is loaded when the first store is made, so servers on local storage
 * never load it.
 */
import type { Readable } from 'node:stream';
import type { S3Client } from '@aws-sdk/client-s3';
import type { BlobInfo, BlobStore } from './blob-store.js';

/** Where the bucket is and how to reach it. */
export interface S3Options {
  bucket: string;
  /** key prefix without leading or trailing slash ('' for the bucket's root) */
  prefix: string;
  /** e.g. http://127.0.0.1:9000 (MinIO, s3rver, R2); absent: AWS */
  endpoint?: string;
  region: string;
  /** absent: the SDK's default chain (AWS_ACCESS_KEY_ID, instance roles, …) */
  accessKeyId?: string;
  secretAccessKey?: string;
  /** path-style URLs (`endpoint/bucket/key`), as most S3-compatible servers want */
  forcePathStyle: boolean;
}

type Sdk = typeof import('@aws-sdk/client-s3');

/** Opens a bucket (the SDK is imported here). */
export async function openS3BlobStore(opts: S3Options): Promise<S3BlobStore> {
  const sdk = await import('@aws-sdk/client-s3');
  const client = new sdk.S3Client({
    region: opts.region,
    forcePathStyle: opts.forcePathStyle,
    ...(opts.endpoint ? { endpoint: opts.endpoint } : {}),
    ...(opts.accessKeyId && opts.secretAccessKey ? { credentials: { accessKeyId: opts.accessKeyId, secretAccessKey: opts.secretAccessKey } } : {}),
  });
  return new S3BlobStore(sdk, client, opts);
}

const notFound = (err: unknown): boolean => {
  const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e?.name === 'NotFound' || e?.name === 'NoSuchKey' || e?.$metadata?.httpStatusCode === 404;
};

export class S3BlobStore implements BlobStore {
  readonly kind = 's3';
  private base: string;

  constructor(private sdk: Sdk, readonly client: S3Client, private opts: S3Options) {
    this.base = opts.prefix ? `${opts.prefix}/` : '';
  }

  get location(): string {
    return `s3://${this.opts.bucket}/${this.opts.prefix}`;
  }

  private key(k: string): string {
    return this.base + k;
  }

  async put(key: string, data: Buffer): Promise<void> {
    await this.client.send(new this.sdk.PutObjectCommand({ Bucket: this.opts.bucket, Key: this.key(key), Body: data, ContentLength: data.length }));
  }

  async delete(keys: readonly string[]): Promise<void> {
    for (let i = 0; i < keys.length; i += 1000) {
      const batch = keys.slice(i, i + 1000).map((k) => ({ Key: this.key(k) }));
      if (batch.length) await this.client.send(new this.sdk.DeleteObjectsCommand({ Bucket: this.opts.bucket, Delete: { Objects: batch, Quiet: true } }));
    }
  }

  async deletePrefix(prefix: string): Promise<void> {
    const keys: string[] = [];
    for await (const page of this.pages(prefix, false)) for (const o of page.Contents ?? []) if (o.Key) keys.push(o.Key.slice(this.base.length));
    await this.delete(keys);
  }

  async listDirs(prefix: string): Promise<string[]> {
    const out: string[] = [];
    const full = this.key(prefix);
    for await (const page of this.pages(prefix, true)) for (const p of page.CommonPrefixes ?? []) if (p.Prefix) out.push(p.Prefix.slice(full.length).replace(/\/$/, ''));
    return out;
  }

  async listFiles(prefix: string): Promise<string[]> {
    const out: string[] = [];
    const full = this.key(prefix);
    for await (const page of this.pages(prefix, true)) for (const o of page.Contents ?? []) if (o.Key) out.push(o.Key.slice(full.length));
    return out;
  }

  /** ListObjectsV2 pages under `prefix` (with `/` as delimiter when `folders`). */
  private async *pages(prefix: string, folders: boolean) {
    let token: string | undefined;
    do {
      const page = await this.client.send(new this.sdk.ListObjectsV2Command({ Bucket: this.opts.bucket, Prefix: this.key(prefix), ContinuationToken: token, ...(folders ? { Delimiter: '/' } : {}) }));
      yield page;
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  async stat(key: string): Promise<BlobInfo | null> {
    try {
      const h = await this.client.send(new this.sdk.HeadObjectCommand({ Bucket: this.opts.bucket, Key: this.key(key) }));
      const etag = h.ETag && /^".*"$/.test(h.ETag) ? h.ETag : `"${h.ETag ?? ''}"`;
      return { size: Number(h.ContentLength ?? 0), etag };
    } catch (err) {
      if (notFound(err)) return null;
      throw err;
    }
  }

  async readAll(key: string): Promise<Buffer> {
    const r = await this.client.send(new this.sdk.GetObjectCommand({ Bucket: this.opts.bucket, Key: this.key(key) }));
    return Buffer.from(await r.Body!.transformToByteArray());
  }

  async *read(key: string, start: number, end: number): AsyncIterable<Buffer> {
    const r = await this.client.send(new this.sdk.GetObjectCommand({ Bucket: this.opts.bucket, Key: this.key(key), Range: `bytes=${start}-${end}` }));
    const body = r.Body as Readable;
    try {
      for await (const chunk of body) yield chunk as Buffer;
    } finally {
      body.destroy();
    }
  }

  async head(key: string, n: number): Promise<Buffer> {
    const chunks: Buffer[] = [];
    for await (const c of this.read(key, 0, n - 1)) chunks.push(c);
    return Buffer.concat(chunks);
  }

  async pruneDir(): Promise<void> {
    // an object store has no folders to remove
  }
}
