/**
 * Image thumbnails of stored files (docs/files.md, "Thumbnails"): `?thumb=<size>` on a file URL,
 * for a size listed in the file field's `options.thumbs`.
 *
 * Sizes (PocketBase's forms): `WxH` crops to W×H from the center, `WxHt` from the top, `WxHb`
 * from the bottom, `WxHf` fits inside W×H without cropping, `0xH` and `Wx0` keep the aspect
 * ratio. Sources are JPEG, PNG, WebP and GIF (its first frame); a thumbnail keeps the source's
 * format. A thumbnail is made once with `sharp` (decode, resize and encode run on libuv's
 * threads, off the JavaScript thread), at most {@link THUMB_CONCURRENCY} at a time, requests for
 * the same thumbnail sharing one generation, and stored beside the original under
 * {@link thumbKey}; it is deleted with the original (FileStorage.remove, removeRecord, sweep).
 * A source sharp cannot decode (or larger than {@link THUMB_MAX_INPUT_PIXELS} pixels or
 * {@link THUMB_MAX_INPUT_BYTES} bytes) yields no thumbnail: the route then answers the original.
 */
import type { FileStorage } from './files.js';
import { parseThumbSize, type ThumbSize } from '../collections/fields/index.js';

/**
 * Thumbnails generated at the same time. sharp runs each on libuv's thread pool (4 threads by
 * default), which file reads also use: two leaves the other threads to downloads.
 */
export const THUMB_CONCURRENCY = 2;
/** Largest source image decoded, in pixels (width × height; sharp's `limitInputPixels`). */
export const THUMB_MAX_INPUT_PIXELS = 50_000_000;
/** Largest source file read to make a thumbnail, in bytes (it is read whole into memory). */
export const THUMB_MAX_INPUT_BYTES = 64 * 1024 * 1024;
/** Source types a thumbnail is made from (sniffed content types). */
export const THUMB_SOURCE_TYPES: ReadonlySet<string> = new Set(['image/jpeg', 'image/png', 'image/gif', 'image/webp']);
/** Stored names whose thumbnail failed remembered (a stored name never changes its bytes). */
const FAILED_MAX = 1000;

/** The storage key of a thumbnail: `<collectionId>/<recordId>/thumbs_<name>/<size>_<name>`. */
export function thumbKey(fileKey: string, size: string): string {
  const slash = fileKey.lastIndexOf('/');
  const name = fileKey.slice(slash + 1);
  return `${fileKey.slice(0, slash + 1)}${thumbFolder(name)}/${size}_${name}`;
}

/** The folder (beside the file) holding the thumbnails of stored file `name`. */
export function thumbFolder(name: string): string {
  return THUMB_FOLDER_PREFIX + name;
}

/** The start of a thumbnail folder's name. */
export const THUMB_FOLDER_PREFIX = 'thumbs_';

type Sharp = typeof import('sharp').default;
let sharpModule: Promise<Sharp> | null = null;
// sharp is loaded on the first thumbnail (a native module most servers never need)
const loadSharp = (): Promise<Sharp> => (sharpModule ??= import('sharp').then((m) => m.default));

/**
 * Resizes `source` to `size` in its own format; null when sharp cannot decode it, it is not a
 * JPEG, PNG, WebP or GIF, or it has more than {@link THUMB_MAX_INPUT_PIXELS} pixels.
 */
export async function renderThumb(source: Buffer, size: ThumbSize): Promise<Buffer | null> {
  const sharp = await loadSharp();
  try {
    // pages: 1 = a GIF's (or animated WebP's) first frame
    const img = sharp(source, { limitInputPixels: THUMB_MAX_INPUT_PIXELS, pages: 1 });
    const { format } = await img.metadata();
    const resize = size.width === 0 || size.height === 0
      ? { width: size.width || undefined, height: size.height || undefined }
      : { width: size.width, height: size.height, fit: size.mode === 'f' ? 'inside' as const : 'cover' as const, position: size.mode === 't' ? 'top' : size.mode === 'b' ? 'bottom' : 'centre' };
    const out = img.rotate().resize(resize);
    if (format === 'jpeg') return await out.jpeg().toBuffer();
    if (format === 'png') return await out.png().toBuffer();
    if (format === 'webp') return await out.webp().toBuffer();
    if (format === 'gif') return await out.gif().toBuffer();
    return null;
  } catch {
    return null;
  }
}

/**
 * Makes and stores thumbnails on demand: a bounded number at a time, one generation per
 * thumbnail however many requests ask for it at once.
 */
export class Thumbnails {
  private inFlight = new Map<string, Promise<boolean>>();
  private running = 0;
  private waiting: Array<() => void> = [];
  private failed = new Set<string>();

  /**
   * @param storage where originals and thumbnails live
   * @param limit thumbnails generated at the same time
   */
  constructor(private storage: FileStorage, private limit = THUMB_CONCURRENCY) {}

  /**
   * Makes sure the thumbnail `size` of the stored file `fileKey` (a JPEG, PNG, WebP or GIF, its
   * sniffed type `mime`) exists in storage. Resolves true when it does, false when none can be
   * made (not an image, undecodable, too large, or the original is gone): serve the original.
   * A failure of a given stored file is remembered (its bytes never change), so it is not
   * decoded again.
   * Never rejects for a bad image; a storage failure rejects.
   */
  ensure(fileKey: string, mime: string, size: string): Promise<boolean> {
    const parsed = parseThumbSize(size);
    if (!parsed || !THUMB_SOURCE_TYPES.has(mime)) return Promise.resolve(false);
    const key = thumbKey(fileKey, size);
    if (this.failed.has(key)) return Promise.resolve(false);
    let job = this.inFlight.get(key);
    if (!job) {
      job = this.slot(() => this.generate(fileKey, key, parsed)).finally(() => this.inFlight.delete(key));
      this.inFlight.set(key, job);
    }
    return job;
  }

  private async generate(fileKey: string, key: string, size: ThumbSize): Promise<boolean> {
    if (await this.storage.stat(key)) return true; // made by a request that finished meanwhile
    const st = await this.storage.stat(fileKey);
    if (!st) return false;
    const source = st.size <= THUMB_MAX_INPUT_BYTES ? await this.storage.readAll(fileKey).catch(() => null) : null;
    const bytes = source && (await renderThumb(source, size));
    if (!bytes) {
      if (source || st.size > THUMB_MAX_INPUT_BYTES) {
        if (this.failed.size >= FAILED_MAX) this.failed.clear();
        this.failed.add(key);
      }
      return false;
    }
    try {
      await this.storage.blobs.put(key, bytes);
    } catch (err) {
      // another instance (shared storage) stored it first
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    // the original was deleted or replaced during the generation: do not leave the thumbnail
    if (!(await this.storage.stat(fileKey))) {
      await this.storage.blobs.deletePrefix(key.slice(0, key.lastIndexOf('/') + 1));
      await this.storage.blobs.pruneDir(fileKey.slice(0, fileKey.lastIndexOf('/') + 1));
      return false;
    }
    return true;
  }

  /** Runs `fn` when fewer than `limit` generations are running. */
  private async slot<T>(fn: () => Promise<T>): Promise<T> {
    if (this.running >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.running++;
    try {
      return await fn();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }
}
