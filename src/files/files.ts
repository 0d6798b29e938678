/**
 * File storage for `file` fields (docs/api.md, "Records": stored, randomized file names).
 *
 * Layout: `<collectionId>/<recordId>/<storedName>` under `<dataDir>/storage/` or an S3 bucket's
 * prefix (blob-store.ts), and a stored file's thumbnails under
 * `<collectionId>/<recordId>/thumbs_<storedName>/` (thumbs.ts), deleted with it. Stored names are
 * `<sanitized base>_<10 random [a-z0-9]>.<ext>` (see {@link storedFileName}); a stored file is
 * never rewritten, so a name identifies its bytes for ever (ETags and caching rely on it).
 *
 * Content types are sniffed from the bytes with `file-type` (magic numbers); content it does not
 * recognise is `text/plain` when it is UTF-8 text (or a text type named by a small table of
 * extensions, e.g. `.csv`, `.json`, `.svg`), else `application/octet-stream`. The client's
 * declared type is never used.
 *
 * Records with writes in flight are marked pending so an orphan sweep never deletes files that
 * are about to be committed.
 */
import { join } from 'node:path';
import type { BlobInfo, BlobStore } from './blob-store.js';
import { isUtf8 } from 'node:buffer';
// file-type is loaded on the first upload (it is large and most requests never need it).
let fileType: Promise<typeof import('file-type')> | null = null;
import { newId } from '../records/ids.js';
import { STORED_FILE_NAME_RE } from '../collections/fields/index.js';
import { THUMB_FOLDER_PREFIX, thumbFolder } from './thumbs.js';

/** Bytes read from the start of a file to sniff its type. */
export const SNIFF_BYTES = 4100;

/** Text types recognised by extension once the content is known to be text. */
const TEXT_TYPES: Record<string, string> = {
  txt: 'text/plain', md: 'text/markdown', csv: 'text/csv', tsv: 'text/tab-separated-values',
  json: 'application/json', xml: 'application/xml', svg: 'image/svg+xml', html: 'text/html',
  htm: 'text/html', css: 'text/css', js: 'text/javascript', mjs: 'text/javascript',
  yaml: 'application/yaml', yml: 'application/yaml', ics: 'text/calendar', vtt: 'text/vtt',
};

/** The extension of a (client or stored) file name: lower-case `[a-z0-9]{1,10}` or ''. */
export function extensionOf(name: string): string {
  const m = /\.([A-Za-z0-9]{1,10})$/.exec(name);
  return m ? m[1].toLowerCase() : '';
}

/**
 * A fresh stored name for an uploaded file: the client's base name reduced to `[A-Za-z0-9_-]`
 * (at most 60 characters, `file` when nothing is left), `_`, 10 random characters, and the
 * original extension (lower-cased) when it is a plain one.
 */
export function storedFileName(original: string): string {
  const baseName = original.split(/[\\/]/).pop() ?? '';
  const ext = extensionOf(baseName);
  const stem = (ext ? baseName.slice(0, -(ext.length + 1)) : baseName)
    .replace(/[^A-Za-z0-9_-]+/g, '_').replace(/_+/g, '_').replace(/^[_-]+|[_-]+$/g, '').slice(0, 60) || 'file';
  return `${stem}_${newId(10)}${ext ? `.${ext}` : ''}`;
}

/** True when `head` (a prefix of the content) is UTF-8 text without NUL bytes. */
function looksLikeText(head: Buffer): boolean {
  if (head.includes(0)) return false;
  // the prefix may end inside a multi-byte sequence: allow up to 3 trailing bytes to be cut
  for (let cut = 0; cut <= 3 && cut <= head.length; cut++) if (isUtf8(head.subarray(0, head.length - cut))) return true;
  return false;
}

/** The content type of a file from its first bytes (see the module comment) and its name. */
export async function detectMime(head: Buffer, name: string): Promise<string> {
  const sniffed = await (await (fileType ??= import('file-type'))).fileTypeFromBuffer(head.subarray(0, SNIFF_BYTES));
  if (sniffed) return sniffed.mime;
  if (head.length > 0 && !looksLikeText(head.subarray(0, SNIFF_BYTES))) return 'application/octet-stream';
  return TEXT_TYPES[extensionOf(name)] ?? 'text/plain';
}

/** Whether `mime` is allowed by a field's `mimeTypes` (empty = any; `type/*` matches the type). */
export function mimeAllowed(mime: string, allowed: readonly string[] | undefined): boolean {
  if (!allowed || allowed.length === 0) return true;
  const major = mime.split('/')[0];
  return allowed.some((a) => a === mime || (a.endsWith('/*') && a.slice(0, -2) === major));
}

/** The storage folder of a data directory. */
export function storageRoot(dataDir: string): string {
  return join(dataDir, 'storage');
}

export class FileStorage {
  private pending = new Map<string, number>();
  /** per collection: bumped by every hold (sweeps detect writes that started under them) */
  private gen = new Map<string, number>();

  /** @param blobs where the bytes live (a folder, `<dataDir>/storage`, or a bucket) */
  constructor(readonly blobs: BlobStore) {}

  /** `local` (the data directory) or `s3` (an object store). */
  get kind(): BlobStore['kind'] {
    return this.blobs.kind;
  }

  /** Key of a stored file; null when the name is not a stored file name (no traversal). */
  key(collectionId: string, recordId: string, name: string): string | null {
    if (!STORED_FILE_NAME_RE.test(name) || !/^[a-z0-9_]{1,30}$/.test(collectionId) || !/^[a-z0-9]{15}$/.test(recordId)) return null;
    return `${collectionId}/${recordId}/${name}`;
  }

  /** Writes a new stored file (never overwrites). */
  async write(collectionId: string, recordId: string, name: string, data: Buffer): Promise<void> {
    const key = this.key(collectionId, recordId, name);
    if (!key) throw new Error(`invalid stored file name ${JSON.stringify(name)}`);
    await this.blobs.put(key, data);
  }

  /** Deletes stored files of a record and their thumbnails (thumbs.ts); missing files are ignored. */
  async remove(collectionId: string, recordId: string, names: readonly string[]): Promise<void> {
    const keys = names.map((n) => this.key(collectionId, recordId, n)).filter((k): k is string => k !== null);
    if (!keys.length) return;
    await this.blobs.delete(keys);
    for (const k of keys) await this.removeThumbs(k);
  }

  /** Deletes every thumbnail of the stored file `key` (the folder of thumbs.ts `thumbFolder`). */
  async removeThumbs(key: string): Promise<void> {
    const slash = key.lastIndexOf('/');
    await this.blobs.deletePrefix(`${key.slice(0, slash + 1)}${thumbFolder(key.slice(slash + 1))}/`);
  }

  /** Removes a record's folder when it is empty and no other write of it is in flight (after a failed write). */
  async pruneRecord(collectionId: string, recordId: string): Promise<void> {
    if (!/^[a-z0-9]{15}$/.test(recordId) || (this.pending.get(`${collectionId}/${recordId}`) ?? 0) > 1) return;
    await this.blobs.pruneDir(`${collectionId}/${recordId}/`);
  }

  /** Deletes every file of a record. */
  async removeRecord(collectionId: string, recordId: string): Promise<void> {
    if (!/^[a-z0-9]{15}$/.test(recordId) || !/^[a-z0-9_]{1,30}$/.test(collectionId)) return;
    await this.blobs.deletePrefix(`${collectionId}/${recordId}/`);
  }

  /** Deletes every file of a collection. */
  async removeCollection(collectionId: string): Promise<void> {
    if (!/^[a-z0-9_]{1,30}$/.test(collectionId)) return;
    await this.blobs.deletePrefix(`${collectionId}/`);
  }

  /** Size and validator of a stored file, or null when absent. */
  stat(key: string): Promise<BlobInfo | null> {
    return this.blobs.stat(key);
  }

  /** A whole stored file. */
  readAll(key: string): Promise<Buffer> {
    return this.blobs.readAll(key);
  }

  /** Bytes `start`..`end` (inclusive) of a stored file, streamed. */
  read(key: string, start: number, end: number): AsyncIterable<Buffer> {
    return this.blobs.read(key, start, end);
  }

  /** Reads up to `n` bytes from the start of a stored file. */
  head(key: string, n = SNIFF_BYTES): Promise<Buffer> {
    return this.blobs.head(key, n);
  }

  /** Marks a record as having a write in flight (sweeps leave its files alone) until `done()`. */
  hold(collectionId: string, recordId: string): () => void {
    const key = `${collectionId}/${recordId}`;
    this.pending.set(key, (this.pending.get(key) ?? 0) + 1);
    this.gen.set(collectionId, (this.gen.get(collectionId) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const n = (this.pending.get(key) ?? 1) - 1;
      if (n <= 0) this.pending.delete(key);
      else this.pending.set(key, n);
    };
  }

  /**
   * Deletes files no committed record references. `referenced(ids)` answers, for record folders
   * found on disk, the stored names each existing record holds (a missing id = the record is
   * gone). A chunk is abandoned when any write of the collection started meanwhile (its answer
   * may be stale), so a sweep can leave orphans for the next one but never deletes a live file.
   * @returns the number of files and folders deleted
   */
  async sweep(collectionId: string, referenced: (ids: string[]) => Promise<Map<string, Set<string>>>): Promise<number> {
    const ids = (await this.blobs.listDirs(`${collectionId}/`)).filter((d) => /^[a-z0-9]{15}$/.test(d));
    let removed = 0;
    for (let i = 0; i < ids.length; i += 500) {
      const chunk = ids.slice(i, i + 500);
      const onDisk = new Map<string, string[]>();
      // thumbnail folders count as entries: kept with their file, else deleted (see `stale` below)
      for (const id of chunk) {
        const files = await this.blobs.listFiles(`${collectionId}/${id}/`);
        // a local folder's listing has its sub-folders already; a bucket lists them apart
        const dirs = this.blobs.kind === 'local' ? [] : (await this.blobs.listDirs(`${collectionId}/${id}/`)).filter((d) => d.startsWith(THUMB_FOLDER_PREFIX));
        onDisk.set(id, [...new Set([...files, ...dirs])]);
      }
      const gen = this.gen.get(collectionId) ?? 0;
      const busy = (id: string) => this.pending.has(`${collectionId}/${id}`) || (this.gen.get(collectionId) ?? 0) !== gen;
      if (chunk.some(busy)) continue;
      const refs = await referenced(chunk);
      for (const id of chunk) {
        if (busy(id)) break;
        const keep = refs.get(id);
        const kept = (n: string) => keep!.has(n) || (n.startsWith(THUMB_FOLDER_PREFIX) && keep!.has(n.slice(THUMB_FOLDER_PREFIX.length)));
        const stale = keep ? onDisk.get(id)!.filter((n) => !kept(n)) : null;
        if (stale === null) {
          await this.removeRecord(collectionId, id);
          removed++;
        } else if (stale.length) {
          await this.remove(collectionId, id, stale);
          // an orphaned thumbnail folder (its file is gone)
          for (const n of stale) if (n.startsWith(THUMB_FOLDER_PREFIX)) await this.blobs.deletePrefix(`${collectionId}/${id}/${n}/`);
          removed += stale.length;
        }
      }
    }
    return removed;
  }
}
