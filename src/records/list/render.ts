/**
 * Page bodies (docs/lists.md; ARCHITECTURE.md, "A read"): records rendered once are kept as UTF-8
 * bytes (Caches.listRows), and a plain page of a base collection is assembled from them around
 * its ids, rendering only the missing ones; a plain page's reply is one Buffer (pageBytes).
 */
import type { SqlValue } from '../../store/bind.js';
import type { ListSql } from '../../store/store.js';
import type { ListRepository } from '../record-repositories.js';
import type { SyncReads } from '../../store/backend.js';
import { hidePrivate, type Where } from '../record-scope.js';
import { boundedCache } from '../../cache/bounded.js';
import { overBudget, type ListConfig, type ListPlanner, type Scope } from './plan.js';

/** Id queries kept (PageRenderer.idQueriesOf); past it they are dropped and built again. */
const ID_QUERIES_MAX = 500;

/** Renders list records and assembles plain pages from the row cache. */
export class PageRenderer {
  /**
   * The id queries of plain pages by FROM (the table), WHERE and ORDER BY, everything they are
   * built from, so a page reuses the same SQL strings: their hashes are kept, and the statement
   * and plan caches compare them by identity instead of hashing and comparing a new string of a
   * few hundred characters each time.
   */
  private idQueries = boundedCache<string, { pageIds: string; aggregate: string }>(ID_QUERIES_MAX);
  /** the backend's list statements (store.sql.list) */
  private readonly L: ListSql;

  constructor(private store: ListRepository, private cfg: ListConfig, private planner: ListPlanner) {
    this.L = store.sql.list;
  }

  /** Rows of a page as records, private fields hidden for the caller. */
  records(s: Scope, rows: unknown[][]): Record<string, unknown>[] {
    return rows.map((row) => {
      const rec = s.codec.fromRow(row);
      hidePrivate(s.c, rec, s.principal);
      return rec;
    });
  }

  /**
   * The items of a plain page of a base collection (each record's JSON as UTF-8 bytes, in page
   * order), assembled from records rendered before (Caches.listRows), or null when the page's
   * query is expensive (it then runs on the reader pool as one rendering query). The page's ids
   * come from a cheap main-thread query with the page's WHERE, ORDER BY and LIMIT; records not in
   * the cache are rendered in one query and kept. A record's rendering never depends on the
   * caller in a base collection (rules choose rows, not what a row shows), so every caller shares
   * the entries; every write to a record drops its entry (the change feed, Caches). Everything runs synchronously in one event-loop turn, inside one read snapshot, so
   * the ids, the cache and the rendered rows agree: SQLite only (its reads are synchronous on the
   * main thread, SqlReader.sync; PostgreSQL has none and answers null here: its pages take
   * pageFromPoolIds).
   */
  pageFromRowCache(s: Scope, where: Where, order: string[], rendered: string, params: SqlValue[], visits: number, bounded: boolean): Buffer[] | null {
    const reader = this.store.reader.sync;
    if (reader === null) return null;
    const { pageIds: sql, aggregate: idsSql } = this.idQueriesOf(s, where, order);
    // `bounded`: a walk's page in an unfiltered scope reads at most WALK_STEP + perPage index entries
    if (!bounded && reader.isExpensive(sql, params, visits)) return null;
    if (s.trace) { s.trace.sql = idsSql; s.trace.params = params; }
    const text = reader.getSync(idsSql, params)?.[0] as string | null | undefined;
    return this.bodiesOf(s, text ? text.split('\u001f') : [], rendered, reader);
  }

  /**
   * The page's id query (pageIdsSql, for its plan) and the same ids as one string (one row crossing
   * into JavaScript instead of one array per id, measured faster: bench/README.md, "The suite"),
   * built once per collection, WHERE and ORDER BY.
   */
  private idQueriesOf(s: Scope, where: Where, order: string[]): { pageIds: string; aggregate: string } {
    const whereSql = where.sql();
    // s.from names the table (s.c.name) the aggregate joins back to
    const key = `${s.from}\u0000${whereSql}\u0000${order.join('\u0001')}`;
    let q = this.idQueries.get(key);
    if (q === undefined) {
      q = { pageIds: this.L.pageIdsSql(s.from, whereSql, order), aggregate: this.L.pageAggregateSql(s.c.name, s.from, whereSql, order, this.L.ID_ORDER, this.L.ID_SEPARATOR) };
      this.idQueries.set(key, q);
    }
    return q;
  }

  /**
   * A plain page of a base collection whose id query is expensive: the ids found on the reader
   * pool, the bodies assembled here from the row cache (bodiesOf), unless a commit landed meanwhile
   * (the ids and the bodies would come from different snapshots): null then, and the page is
   * rendered on the pool. Measured faster than rendering every such page on the pool on the cities'
   * relation-filter pages, whose hot rows are cached (bench/README.md, "List pages").
   */
  async pageFromPoolIds(s: Scope, where: Where, order: string[], rendered: string, params: SqlValue[]): Promise<Buffer[] | null> {
    const commits = this.store.writer.commits;
    const idsSql = this.L.pageAggregateSql(s.c.name, s.from, where.sql(), order, this.L.ID_ORDER, this.L.ID_SEPARATOR);
    const row = await this.planner.runOne(s, idsSql, params, 0, 'pool');
    if (this.store.writer.commits !== commits) return null;
    const text = row?.[0] as string | null | undefined;
    const ids = text ? text.split('\u001f') : [];
    const sync = this.store.reader.sync;
    if (sync !== null) return this.bodiesOf(s, ids, rendered, sync);
    // PostgreSQL: the records not cached are rendered on the pool too
    const bodies = this.bodiesOf(s, ids, rendered, null);
    if (bodies === null || !bodies.includes(undefined as unknown as Buffer)) return bodies;
    const missing = ids.filter((_, i) => bodies[i] === undefined);
    const rows = await this.store.reader.all(this.L.renderByIdsSql(s.c.name, rendered, missing.length), missing, { pool: true, budgetMs: this.cfg.timeBudgetMs ?? 0 }).catch((err) => {
      throw overBudget(err) || err;
    });
    if (this.store.writer.commits !== commits) return null;
    return this.fillBodies(s, ids, bodies, rows[0]?.[0] as string | null | undefined);
  }

  /**
   * The bodies of a page's records in page order (Caches.listRows as UTF-8 bytes), those not
   * cached rendered by one main-thread query on `sync` (SQLite's reader) and kept; null when a
   * record is gone meanwhile. `sync` null: the missing ones are left as holes, for the caller to
   * render off the main thread (fillBodies).
   */
  private bodiesOf(s: Scope, ids: string[], rendered: string, sync: SyncReads | null): Buffer[] | null {
    const cache = this.store.caches.listRows;
    const version = this.store.registry.version(s.c.id);
    const bodies: Buffer[] = new Array<Buffer>(ids.length);
    const missing: string[] = [];
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i];
      const body = cache.get(s.c.id, id, version);
      if (body === undefined) missing.push(id);
      else bodies[i] = body;
    }
    if (!missing.length || sync === null) return bodies;
    // one string for all of them: `id US json RS id US json …` (JSON escapes control characters)
    const rows = sync.allSync(this.L.renderByIdsSql(s.c.name, rendered, missing.length), missing);
    return this.fillBodies(s, ids, bodies, rows[0]?.[0] as string | null | undefined);
  }

  /**
   * Fills the holes of `bodies` (page order) from `text`, the rendering of the missing records
   * (`id US json RS …`), caching each; null when a record is gone meanwhile.
   */
  private fillBodies(s: Scope, ids: string[], bodies: Buffer[], text: string | null | undefined): Buffer[] | null {
    const cache = this.store.caches.listRows;
    const version = this.store.registry.version(s.c.id);
    const byId = new Map<string, string>();
    if (text) {
      for (const part of text.split('\u001e')) {
        const cut = part.indexOf('\u001f');
        byId.set(part.slice(0, cut), part.slice(cut + 1));
      }
    }
    for (let i = 0; i < ids.length; i++) {
      if (bodies[i] !== undefined) continue;
      const id = ids[i];
      const rendered = byId.get(id);
      if (rendered === undefined) return null;
      const body = ownBytes(rendered);
      bodies[i] = body;
      cache.set(s.c.id, id, version, body);
    }
    return bodies;
  }
}

const COMMA = 0x2c;

/**
 * `text` as UTF-8 bytes in memory of their own (never a slice of Node's 8 KiB Buffer pool, which
 * one cached row would keep alive whole), for Caches.listRows.
 */
function ownBytes(text: string): Buffer {
  const out = Buffer.allocUnsafeSlow(Buffer.byteLength(text, 'utf8'));
  out.write(text, 0, 'utf8');
  return out;
}

const PAGE_TAIL = Buffer.from(']}');

/** Page bodies up to this size are cut from a shared slab (slabBytes); larger ones get their own memory. */
const SLAB_PIECE_MAX = 64 * 1024;

const SLAB_SIZE = 512 * 1024;

let slab = Buffer.allocUnsafeSlow(0);

let slabAt = 0;

/**
 * `size` bytes for a page body, cut from a shared slab: Node's own pool serves only requests under
 * 4 KiB, and a page of 20 records (about 5 KB of cities) otherwise costs a new ArrayBuffer each
 * time. A body lives until it is sent (the page cache keeps a copy of its own, PageCache.set), so
 * a slab is freed soon after its last piece is sent.
 */
function slabBytes(size: number): Buffer {
  if (size > SLAB_PIECE_MAX) return Buffer.allocUnsafe(size);
  if (slabAt + size > slab.length) {
    slab = Buffer.allocUnsafeSlow(SLAB_SIZE);
    slabAt = 0;
  }
  const out = slab.subarray(slabAt, slabAt + size);
  slabAt += (size + 7) & ~7; // 8-byte aligned pieces
  return out;
}

/** A page's items rendered by SQLite as one BLOB (NULL: no rows), as pageBytes takes them. */
export function chunks(blob: unknown): Uint8Array[] {
  return blob instanceof Uint8Array ? [blob] : [];
}

/**
 * A plain page's body as UTF-8 bytes: `head` (ASCII, ending in `"items":[`), the items joined by
 * commas, `]}`. The HTTP engines send a Buffer as it is, where a string body is transcoded to UTF-8
 * on every send (measured dearer than copying the cached bytes on the cities, whose names are
 * mostly non-ASCII), and SQLite's rendering read as a BLOB skips decoding it into a string
 * (bench/README.md, "Lists over the cities", "List pages").
 */
export function pageBytes(head: string, items: Uint8Array[]): Buffer {
  let size = head.length + PAGE_TAIL.length + Math.max(0, items.length - 1);
  for (const b of items) size += b.length;
  const out = slabBytes(size);
  let at = out.write(head, 0, 'latin1');
  for (let i = 0; i < items.length; i++) {
    if (i > 0) out[at++] = COMMA;
    out.set(items[i], at);
    at += items[i].length;
  }
  out.set(PAGE_TAIL, at);
  return out;
}
