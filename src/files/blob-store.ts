/**
 * Where stored files live: the storage boundary under FileStorage (src/files/files.ts). Keys are
 * `<collectionId>/<recordId>/<storedName>` (and `…/thumbs_<storedName>/<size>_<storedName>` for
 * thumbnails, src/files/thumbs.ts); a stored file is written once and never rewritten.
 *
 * - `LocalBlobStore`: a folder (`<dataDir>/storage`), the embedded default;
 * - `S3BlobStore` (s3-blob-store.ts): an S3-compatible bucket under a prefix
 *   (`SERVICE_STORAGE=s3://bucket/prefix`; docs/files.md, "Files in an S3-compatible bucket":
 *   `/api/meta` capability `objectStore`).
 */
import { createReadStream } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { link, mkdir, open, readdir, readFile, rm, rmdir, stat, unlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';

/** What a download needs of a stored object. */
export interface BlobInfo {
  /** bytes */
  size: number;
  /** a strong validator, quoted (`"…"`) */
  etag: string;
}

export interface BlobStore {
  readonly kind: 'local' | 's3';
  /** A human-readable location for messages (a folder, or `s3://bucket/prefix`). */
  readonly location: string;
  /** Writes a new object. @throws when it exists already (local) or the backend fails */
  put(key: string, data: Buffer): Promise<void>;
  /** Deletes objects; missing ones are ignored. */
  delete(keys: readonly string[]): Promise<void>;
  /** Deletes every object under `prefix` (ending in `/`). */
  deletePrefix(prefix: string): Promise<void>;
  /** Names of the "folders" directly under `prefix` (ending in `/`). */
  listDirs(prefix: string): Promise<string[]>;
  /** Names of the objects directly under `prefix` (ending in `/`). */
  listFiles(prefix: string): Promise<string[]>;
  /** Size and validator, or null when absent. */
  stat(key: string): Promise<BlobInfo | null>;
  /** The whole object. */
  readAll(key: string): Promise<Buffer>;
  /** Bytes `start`..`end` (inclusive) as chunks; closing the iterator early releases the read. */
  read(key: string, start: number, end: number): AsyncIterable<Buffer>;
  /** Up to the first `n` bytes (type sniffing). */
  head(key: string, n: number): Promise<Buffer>;
  /** Removes an empty record folder (local only; object stores have no folders). */
  pruneDir(prefix: string): Promise<void>;
}

/** The folder under the root where `put` writes a file before linking it into place; backups skip it. */
export const PARTIAL_DIR = '.partial';

/** Chunk size of streamed local reads. */
const STREAM_CHUNK = 256 * 1024;

/** Files in a folder of the local disk. */
export class LocalBlobStore implements BlobStore {
  readonly kind = 'local';
  constructor(readonly root: string) {}

  get location(): string {
    return this.root;
  }

  private path(key: string): string {
    return join(this.root, ...key.split('/'));
  }

  /**
   * Writes the bytes to a file of `<root>/.partial/` and links it into place, so a concurrent
   * reader sees the whole object or none (a thumbnail is stat'ed by other requests while it is
   * made, src/files/thumbs.ts). The link fails with EEXIST when the key exists.
   */
  async put(key: string, data: Buffer): Promise<void> {
    const path = this.path(key);
    const partialDir = join(this.root, PARTIAL_DIR);
    await mkdir(partialDir, { recursive: true, mode: 0o700 });
    const partial = join(partialDir, randomBytes(12).toString('hex'));
    await writeFile(partial, data, { flag: 'wx', mode: 0o600 });
    try {
      for (let attempt = 0; ; attempt++) {
        await mkdir(dirname(path), { recursive: true, mode: 0o700 });
        try {
          return await link(partial, path);
        } catch (err) {
          const code = (err as NodeJS.ErrnoException).code;
          // a file system without hard links: write in place (readers may see a partial file)
          if (code === 'EPERM' || code === 'ENOTSUP' || code === 'EOPNOTSUPP') return await writeFile(path, data, { flag: 'wx', mode: 0o600 });
          // the empty folder was pruned by a failed write in between: make it again, once
          if (code !== 'ENOENT' || attempt > 0) throw err;
        }
      }
    } finally {
      await unlink(partial).catch(() => undefined);
    }
  }

  async delete(keys: readonly string[]): Promise<void> {
    for (const k of keys) await unlink(this.path(k)).catch(() => undefined);
  }

  async deletePrefix(prefix: string): Promise<void> {
    await rm(this.path(prefix.replace(/\/$/, '')), { recursive: true, force: true });
  }

  async listDirs(prefix: string): Promise<string[]> {
    return readdir(this.path(prefix.replace(/\/$/, ''))).catch(() => [] as string[]);
  }

  listFiles(prefix: string): Promise<string[]> {
    return this.listDirs(prefix);
  }

  async stat(key: string): Promise<BlobInfo | null> {
    const st = await stat(this.path(key)).catch(() => null);
    if (!st || !st.isFile()) return null;
    // names are never reused for other bytes: size and mtime make a strong validator
    return { size: st.size, etag: `"${st.size.toString(36)}-${Math.trunc(st.mtimeMs).toString(36)}"` };
  }

  readAll(key: string): Promise<Buffer> {
    return readFile(this.path(key));
  }

  read(key: string, start: number, end: number): AsyncIterable<Buffer> {
    return createReadStream(this.path(key), { start, end, highWaterMark: STREAM_CHUNK });
  }

  async pruneDir(prefix: string): Promise<void> {
    await rmdir(this.path(prefix.replace(/\/$/, ''))).catch(() => undefined);
  }

  async head(key: string, n: number): Promise<Buffer> {
    const fh = await open(this.path(key), 'r');
    try {
      const buf = Buffer.alloc(n);
      const { bytesRead } = await fh.read(buf, 0, n, 0);
      return buf.subarray(0, bytesRead);
    } finally {
      await fh.close();
    }
  }
}
