/**
 * The app's data context shared by the domain services: the schema registry, the reader, the
 * writer, the compiled rules and the per-collection record codecs.
 */
import type { CollectionRegistry } from '../collections/collection-registry.js';
import type { Reader } from './sqlite/reader.js';
import type { WriterClient } from './sqlite/writer-client.js';
import type { Collection } from '../collections/types.js';
import { RuleBook } from '../rules/access.js';
import { buildCodec, type RecordCodec } from '../records/record-codec.js';
import { ApiError } from '../errors/api-error.js';
import { AuthRecordCache, RecordCache } from '../cache/record-cache.js';
import type { ChangeBatch } from './change-feed.js';

export class Store {
  readonly rules: RuleBook;
  readonly recordCache = new RecordCache();
  /**
   * Records as list pages render them (SQL `json_object`, no stored row), so plain pages of base
   * collections assemble hot rows from memory (records-list.ts); same coherence as recordCache.
   */
  readonly listRows = new RecordCache(8 * 1024 * 1024);
  readonly authRecords = new AuthRecordCache();
  private codecs = new Map<string, { version: number; codec: RecordCodec }>();
  /** bumped on every committed write to a collection (for count caches) */
  private writeGen = new Map<string, number>();
  private valuesGen = new Map<string, number>();

  constructor(readonly registry: CollectionRegistry, readonly reader: Reader, readonly writer: WriterClient) {
    this.rules = new RuleBook(registry);
    // Every cache of records and counts invalidates from the change feed, and nowhere else.
    writer.changes.subscribe((batch) => this.applyChanges(batch));
  }

  /** Invalidates what one committed transaction made stale (the change feed's listener). */
  private applyChanges(batch: ChangeBatch): void {
    for (const ch of batch.changes) {
      if (ch.op === 'create') this.rowsAdded(ch.collection);
      else if (ch.op === 'update') this.rowChanged(ch.collection, ch.id);
      else this.rowDeleted(ch.collection, ch.id);
    }
    for (const cid of batch.truncated) this.touched(cid);
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

  /*
   * Two write generations per collection key the count cache: `rows` moves when rows may have been
   * added or removed, `values` when existing rows changed. A count without a WHERE clause depends
   * on `rows` alone, so updates (the common concurrent write) keep it cached.
   */
  private bump(map: Map<string, number>, collectionId: string): void {
    map.set(collectionId, (map.get(collectionId) ?? 0) + 1);
  }

  /** A collection's rows changed in unknown ways (invalidates counts and cached records). */
  private touched(collectionId: string): void {
    this.bump(this.writeGen, collectionId);
    this.bump(this.valuesGen, collectionId);
    this.recordCache.dropCollection(collectionId);
    this.listRows.dropCollection(collectionId);
    this.authRecords.dropCollection(collectionId);
  }

  /** Rows were added to a collection (invalidates counts only). */
  private rowsAdded(collectionId: string): void {
    this.bump(this.writeGen, collectionId);
  }

  /** One row was deleted (invalidates counts and that record's cache entry). */
  private rowDeleted(collectionId: string, id: string): void {
    this.bump(this.writeGen, collectionId);
    this.recordCache.drop(collectionId, id);
    this.listRows.drop(collectionId, id);
    this.authRecords.drop(collectionId, id);
  }

  /** One row's values changed (invalidates filtered counts and that record's cache entry). */
  private rowChanged(collectionId: string, id: string): void {
    this.bump(this.valuesGen, collectionId);
    this.recordCache.drop(collectionId, id);
    this.listRows.drop(collectionId, id);
    this.authRecords.drop(collectionId, id);
  }

  /** The generation a cached count of the collection is valid for (see `bump`). */
  generation(collectionId: string, filtered = true): string {
    const rows = this.writeGen.get(collectionId) ?? 0;
    return filtered ? `${rows}:${this.valuesGen.get(collectionId) ?? 0}` : `${rows}`;
  }

  /** After a schema change: drop cached statements and plans. */
  schemaChanged(): void {
    this.reader.invalidate();
  }
}
