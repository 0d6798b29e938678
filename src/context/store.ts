/**
 * The app's data context shared by the domain services: the schema registry, the reader, the
 * writer, the storage operations (`sql`), the compiled rules and the per-collection record codecs.
 * Built by the composition root (src/boot/open-data.ts) over the parts an open database hands
 * back (StoreParts of src/store/store.ts); it lives above storage, which imports none of the
 * features it bundles (ARCHITECTURE.md, "Folders").
 */
import type { CollectionRegistry } from '../collections/collection-registry.js';
import type { SqlReader, SqlWriter } from '../store/backend.js';
import type { StoreSql } from '../store/store.js';
import type { Collection } from '../model/schema.js';
import { RuleBook } from '../rules/access.js';
import { buildCodec, type RecordCodec } from '../records/record-codec.js';
import { NotFound } from '../store/errors/store-errors.js';
import { Caches } from '../cache/caches.js';

/**
 * The data context (this module's header). Building it subscribes its caches to the writer's
 * change feed, so it is built once per open database, right after the open.
 */
export class Store {
  readonly rules: RuleBook;
  /** every data cache, kept coherent by the change feed (src/cache/caches.ts) */
  readonly caches: Caches;
  private codecs = new Map<string, { version: number; codec: RecordCodec }>();

  /** `sql`: the storage operations of the backend `reader` and `writer` belong to (src/store/open.ts). */
  constructor(readonly registry: CollectionRegistry, readonly reader: SqlReader, readonly writer: SqlWriter, readonly sql: StoreSql) {
    this.rules = new RuleBook(registry, sql.kind);
    this.caches = new Caches(writer.changes);
  }

  /** The collection by id or name. @throws NotFound (the API answers 404) when there is none */
  collection(idOrName: string): Collection {
    const c = this.registry.find(idOrName);
    if (!c) throw new NotFound('collection', 'Missing collection context.');
    return c;
  }

  /** The record codec of `c`, built again when the registry holds a new version of it. */
  codec(c: Collection): RecordCodec {
    const version = this.registry.version(c.id);
    const hit = this.codecs.get(c.id);
    if (hit && hit.version === version) return hit.codec;
    const codec = buildCodec(c, this.sql.json);
    this.codecs.set(c.id, { version, codec });
    return codec;
  }

  /** After a schema change: drop cached statements and plans. */
  schemaChanged(): void {
    this.reader.invalidate();
  }
}
