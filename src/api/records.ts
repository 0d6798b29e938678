/** Record routes: list, view, abilities, create, update, delete (docs/api.md, "Records"). */
import { ApiError } from '../errors/api-error.js';
import type { Reply, Req, Route } from '../http/types.js';
import { json, noContent } from '../http/types.js';
import type { ApiContext } from './context.js';
import { jsonBody, query } from './request.js';
import { isMultipart, recordWriteBody, type WriteBody } from './multipart.js';
import { ownerMatches, type Principal } from '../rules/access.js';
import type { Collection } from '../model/schema.js';
import { hidePrivate, projected, readShape, type ReadShape } from '../records/records-read.js';
import { stripServerManaged } from '../records/records-write.js';
import { parseListQuery } from '../records/list-query.js';
import type { RecordCodec } from '../records/record-codec.js';
import { sessionCookies } from './cookies.js';

const BASE = '/api/collections/:col/records';

/** A record cache entry: the rendered body and the stored row. */
type CachedRecord = { body: string; row?: unknown[] };

export function recordRoutes(ctx: ApiContext): Route[] {
  const { store, reads, writes, auth } = ctx;

  /** Serializes one stored row as the response record (private fields hidden, expand, fields). */
  const respond = (status: number, c: Collection, row: unknown[], principal: Principal | null, shape: ReadShape, headers?: Array<[string, string]>): Reply | Promise<Reply> => {
    const body = writtenRecordJson(ctx, c, row, principal, shape);
    return typeof body === 'string' ? json(status, body, headers) : body.then((b) => json(status, b, headers));
  };

  /**
   * A record's rendered body and stored row from the record cache, synchronously on a hit; on a
   * miss read (synchronously on SQLite, a promise on PostgreSQL) and cached when nothing committed
   * meanwhile and the doorkeeper admits it. 404 when absent.
   */
  const cachedRecord = (c: Collection, id: string): CachedRecord | Promise<CachedRecord> => {
    const version = store.registry.version(c.id);
    const hit = store.caches.records.entry(c.id, id, version);
    if (hit !== undefined) return hit;
    return missedRecord(c, id, version);
  };

  /*
   * The record cache's doorkeeper: while reads mostly miss (more misses than hits over the last
   * DOOR_WINDOW misses), a record is cached only on its second miss, remembered by a fingerprint
   * of its id in a small table. Random reads over a large collection otherwise fill the cache with
   * records never read again, each living long enough to be promoted into V8's old generation
   * (bench/README.md, "Random reads over the cities"). While reads mostly hit (a fresh server
   * too), every miss is cached, as before.
   */
  const DOOR_WINDOW = 1024;
  const doorSlots = new Int32Array(4096);
  let doorShut = false;
  let doorMisses = 0;
  let doorHits = 0;
  /** True when the record with id `id` should be cached after this miss. */
  const admit = (id: string): boolean => {
    const cache = store.caches.records;
    if (cache.misses - doorMisses >= DOOR_WINDOW) {
      doorShut = cache.hits - doorHits < cache.misses - doorMisses;
      doorMisses = cache.misses;
      doorHits = cache.hits;
    }
    if (!doorShut) return true;
    let h = 0x811c9dc5; // FNV-1a over the id's UTF-16 units
    for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 0x01000193);
    h |= 1; // 0 marks an empty slot
    const slot = (h >>> 20) & 4095;
    if (doorSlots[slot] === h) {
      doorSlots[slot] = 0;
      return true;
    }
    doorSlots[slot] = h;
    return false;
  };

  /** The point read's SQL of each codec, built once instead of on every miss. */
  const rowSqls = new WeakMap<RecordCodec, string>();

  /**
   * A record cache miss: the point read, then the rendered record. On SQLite the read runs on the
   * main thread synchronously (SyncReads), so the reply is too: no promise or extra turn.
   */
  const missedRecord = (c: Collection, id: string, version: number): CachedRecord | Promise<CachedRecord> => {
    const codec = store.codec(c);
    let sql = rowSqls.get(codec);
    if (sql === undefined) rowSqls.set(codec, (sql = store.sql.records.rowById(c, codec.columns)));
    const commits = store.writer.commits;
    const sync = store.reader.sync;
    if (sync !== null) return readRecord(c, id, version, codec, commits, sync.getSync(sql, [id]));
    return store.reader.get(sql, [id]).then((row) => readRecord(c, id, version, codec, commits, row));
  };

  /** The read row rendered, and cached when it may be (see missedRecord); 404 when absent. */
  const readRecord = (c: Collection, id: string, version: number, codec: RecordCodec, commits: number, row: unknown[] | undefined): CachedRecord => {
    if (row === undefined) throw ApiError.notFound();
    const body = codec.stringify(codec.fromRow(row));
    // kept only when nothing committed during the read (the entry could be stale), the schema is the same and the doorkeeper admits it
    if (store.writer.commits === commits && store.registry.version(c.id) === version && admit(id)) store.caches.records.set(c.id, id, version, body, row);
    return { body, row };
  };

  const view = (req: Req): Reply | Promise<Reply> => {
    const c = store.collection(req.params[0]);
    const principal = auth.resolve(req);
    return principal instanceof Promise ? principal.then((p) => viewAs(req, c, p)) : viewAs(req, c, principal);
  };

  /** A view by a resolved caller: synchronous when the record cache answers (no read). */
  const viewAs = (req: Req, c: Collection, principal: Principal | null): Reply | Promise<Reply> => {
    // The record cache (record-cache.ts) serves plain views of base collections whose view rule
    // is open to the caller, or is exactly `<field> = @request.auth.id` (RuleBook.ownerColumn).
    if (req.query === '' && c.type === 'base' && !c.options.ttl_field) {
      // The owner shape is checked first: it is memoized, and a full rule check would bind
      // parameters only to discard them. Superusers bypass rules, so they take the open path.
      const owner = principal?.superuser ? null : store.rules.ownerColumn(c, 'viewRule');
      if (owner !== null) {
        const ownerReply = (hit: CachedRecord): Reply => {
          if (!ownerMatches(owner, hit.row?.[owner.index], principal)) throw ApiError.notFound();
          return json(200, hit.body);
        };
        const hit = cachedRecord(c, req.params[1]);
        return hit instanceof Promise ? hit.then(ownerReply) : ownerReply(hit);
      }
      if (store.rules.check(c, 'viewRule', principal, null, 'GET', req).kind === 'all') {
        const hit = cachedRecord(c, req.params[1]);
        return hit instanceof Promise ? hit.then((h) => json(200, h.body)) : json(200, hit.body);
      }
    }
    const codec = store.codec(c);
    return reads.view(c, req.params[1], principal, readShape(req.query), req).then((rec) => json(200, codec.stringify(rec)));
  };

  /**
   * Route.multipart of record writes: only a collection with a file field takes an upload's worth
   * of multipart body; any other (or an unknown name) has the JSON limit.
   */
  const takesFiles = (req: Req): boolean => store.registry.find(req.params[0])?.fields.some((f) => f.type === 'file') ?? false;

  return [
    {
      method: 'get', pattern: BASE, handler: async (req) => {
        const c = store.collection(req.params[0]);
        const principal = await auth.resolve(req);
        return json(200, await reads.list(c, principal, parseListQuery(req.query), req));
      },
    },
    { method: 'get', pattern: `${BASE}/:id`, handler: view },
    {
      method: 'get', pattern: `${BASE}/:id/abilities`, handler: async (req) => {
        const c = store.collection(req.params[0]);
        const principal = await auth.resolve(req);
        return json(200, JSON.stringify(await reads.abilities(c, req.params[1], principal, req)));
      },
    },
    {
      method: 'post', pattern: BASE, multipart: takesFiles, handler: (req) => {
        const c = store.collection(req.params[0]);
        const principal = auth.resolve(req);
        // The reply's shape (`fields`, `expand`); no query string (the common create) parses nothing.
        const shape = readShape(req.query);
        // the writer fires the collection's record events (src/records/lifecycle.ts)
        const create = (p: Principal | null, input: WriteBody) =>
          writes.create(c, p, stripServerManaged(c, input.body), input.uploads, undefined, req).then(({ row }) => respond(201, c, row, p, shape));
        // A JSON body from a resolved caller goes straight to the write (the hot path of scenario
        // 5); a pending token check or a multipart body is awaited first.
        if (principal instanceof Promise || isMultipart(req)) return (async () => create(await principal, await recordWriteBody(req, c)))();
        return create(principal, { body: jsonBody(req), uploads: null });
      },
    },
    {
      method: 'patch', pattern: `${BASE}/:id`, multipart: takesFiles, handler: async (req) => {
        const c = store.collection(req.params[0]);
        const principal = await auth.resolve(req);
        const input = await recordWriteBody(req, c); // JSON or multipart with files
        const body = stripServerManaged(c, input.body);
        await auth.limitPasswordChange(c, req.params[1], principal, body, req); // scope pwchange; superusers exempt
        const changesPassword = c.type === 'auth' && typeof body === 'object' && body !== null && 'password' in body;
        const app = ctx.app;
        if (changesPassword && app.hasAuthHook('beforePasswordChange')) {
          const target = await auth.loadAuthRecord(c, req.params[1]);
          if (target) await app.authHook('beforePasswordChange', 'password_change', c, target, req);
        }
        const { row, passwordChanged } = await writes.update(c, req.params[1], principal, body, input.uploads, undefined, req);
        // Every other session ends; the owner gets fresh auth and CSRF cookies.
        const session = passwordChanged ? await auth.afterPasswordChange(c, req.params[1], principal, req) : undefined;
        if (passwordChanged && app.hasAuthHook('afterPasswordChange')) {
          const changed = await auth.loadAuthRecord(c, req.params[1]);
          if (changed) await app.authHook('afterPasswordChange', 'password_change', c, changed, req);
        }
        const headers = session ? sessionCookies(session, ctx.config.insecureCookies) : undefined;
        return respond(200, c, row, principal, readShape(req.query), headers);
      },
    },
    {
      method: 'del', pattern: `${BASE}/:id`, handler: async (req) => {
        const c = store.collection(req.params[0]);
        const principal = await auth.resolve(req);
        await writes.delete(c, req.params[1], principal, undefined, req);
        return noContent();
      },
    },
  ];
}

/**
 * A written record's stored row as the JSON a write answers (docs/api.md, "Create a record"):
 * private fields hidden from `principal`, then `expand` and `fields` of `shape`. A string at once
 * without expand (no extra async frame on the hot path); a promise when expand reads relations.
 */
export function writtenRecordJson(ctx: ApiContext, c: Collection, row: unknown[], principal: Principal | null, shape: ReadShape): string | Promise<string> {
  const codec = ctx.store.codec(c);
  const rec = codec.fromRow(row);
  hidePrivate(c, rec, principal);
  if (!shape.expand) return codec.stringify(projected(rec, shape));
  return ctx.reads.finish(c, [rec], principal, shape).then(([out]) => codec.stringify(out));
}

export function requireAuthCollection(c: Collection): void {
  if (c.type !== 'auth') throw ApiError.notFound('Not an auth collection.');
}
