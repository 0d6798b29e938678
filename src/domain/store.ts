/**
 * The app's data context shared by the domain services: the schema registry, the reader, the
 * writer, the compiled rules and the per-collection record codecs.
 */
import type { CollectionRegistry } from './collection-registry.js';
import type { Reader } from '../db/reader.js';
import type { WriterClient } from '../db/writer-client.js';
import type { Collection } from './types.js';
import { RuleBook } from './access.js';
import { buildCodec, type RecordCodec } from './record-codec.js';
import { ApiError } from '../errors/api-error.js';
import { RecordCache } from './record-cache.js';

export class Store {
  readonly rules: RuleBook;
  readonly recordCache = new RecordCache();
  private codecs = new Map<string, { version: number; codec: RecordCodec }>();
  /** bumped on every committed write to a collection (for count caches) */
  private writeGen = new Map<string, number>();

  constructor(readonly registry: CollectionRegistry, readonly reader: Reader, readonly writer: WriterClient) {
    this.rules = new RuleBook(registry);
  }

  /** The collection by id or name, or 404. */
  collection(idOrName: string): Collection {
    const c = this.registry.find(idOrName);
    if (!c) throw ApiError.notFound('Missing collection context.');
    return c;
  }

  codec(c: Collection): RecordCodec {
    const version = this.registry.version(c.id);
    const hit = this.codecs.get(c.id);
    if (hit && hit.version === version) return hit.codec;
    const codec = buildCodec(c);
    this.codecs.set(c.id, { version, codec });
    return codec;
  }

  /** Records that a collection's rows changed in unknown ways (invalidates counts and cached records). */
  touched(collectionId: string): void {
    this.writeGen.set(collectionId, (this.writeGen.get(collectionId) ?? 0) + 1);
    this.recordCache.dropCollection(collectionId);
  }

  /** Records that rows were added to a collection (invalidates counts only). */
  rowsAdded(collectionId: string): void {
    this.writeGen.set(collectionId, (this.writeGen.get(collectionId) ?? 0) + 1);
  }

  /** Records that one row changed or was deleted (invalidates counts and that record's cache entry). */
  rowChanged(collectionId: string, id: string): void {
    this.writeGen.set(collectionId, (this.writeGen.get(collectionId) ?? 0) + 1);
    this.recordCache.drop(collectionId, id);
  }

  generation(collectionId: string): number {
    return this.writeGen.get(collectionId) ?? 0;
  }

  /** After a schema change: drop cached statements and plans. */
  schemaChanged(): void {
    this.reader.invalidate();
  }
}
