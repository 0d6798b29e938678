/**
 * Realtime visibility (docs/realtime.md, "Protocol"): whether a change may reach a group of
 * subscribers, decided as REST decides a read: the collection's list rule (a subscription to a
 * collection) or view rule (a subscription to one record) for that caller, the subscription's
 * filter, the expiry field (an expired row is never sent). A group shares one verdict, so one
 * SQL query per group and commit decides for every socket in it; a delete is decided on the row
 * as it was (the writer reports it). Every query-decided verdict is decided ahead of the sends,
 * through the reader's promise reads (decideQueried; on PostgreSQL the main thread goes on
 * meanwhile); costly batches go to the reader pool under the filter budget
 * (RealtimeLimits.filterBudgetMs), failing closed.
 */
import type { Collection } from '../model/schema.js';
import type { SqlReader } from '../store/backend.js';
import type { RecordSql } from '../store/record-sql.js';
import type { ListSql } from '../store/store.js';
import type { RecordCodec } from '../records/record-codec.js';
import type { Change } from '../store/change-feed.js';
import type { SqlValue } from '../store/bind.js';
import { bindValue } from '../store/bind.js';
import { Where } from '../store/sql/where.js';
import { ReadBudgetExceeded } from '../store/read-budget.js';
import { ownerMatches, type OwnerColumn, type RuleCheck } from '../rules/access.js';
import type { AuthPrincipal } from '../auth/auth-service.js';
import type { Logger } from '../log/logger.js';
import type { RealtimeLimits, Subscription } from './topics.js';

/**
 * A batch's verdicts leave the main thread for the reader pool past this many query-decided
 * groups, or this many characters of their SQL: below it (a few filters, simple rules: the common
 * case) they stay synchronous, as a pool round trip would cost more than the queries.
 */
const OFF_THREAD_GROUPS = 8;
const OFF_THREAD_SQL_CHARS = 16 * 1024;
/** Groups handed to the reader pool per turn of the event loop (decideOffThread). */
const OFF_THREAD_SLICE = 16;
/**
 * Past the thresholds above, groups whose SQL (filter and rule) is at most CHEAP_SQL_CHARS long
 * are still decided on the main thread for up to MAIN_THREAD_SLICE_MS per collection and batch
 * (a pool round trip costs more than such a query); longer ones, and the rest, go to the pool.
 */
const CHEAP_SQL_CHARS = 2048;
const MAIN_THREAD_SLICE_MS = 10;

/** Subscribers that share a verdict: same rule, same bound parameters, same filter. */
export interface Audience {
  rule: RuleCheck;
  /**
   * The owner-rule shortcut (RuleBook.ownerColumn): the rule is `<field> = @request.auth.id` and
   * there is no filter, so the verdict is a comparison in JavaScript, no query.
   */
  owner: { column: OwnerColumn; field: string; principal: AuthPrincipal | null } | null;
  filterSql: string | null;
  filterParams: SqlValue[];
  subs: Subscription[];
  /** ids visible to this audience, decided ahead per batch (Visibility.decideQueried, decideCostly) */
  visible?: Set<string>;
  /** deleted ids visible to it (decided ahead with `visible`) */
  deleted?: Set<string>;
  /** decided off the main thread: the clients' authVersion then (a caller changed since gets nothing) */
  authVersions?: number[];
}

/** A stable key for bound parameter values. */
export function paramsKey(params: SqlValue[]): string {
  let out = '';
  for (const v of params) out += `${typeof v === 'object' && v !== null ? 'b' : typeof v}:${String(v)}\u0001`;
  return out;
}

/**
 * What Visibility needs instead of the whole Store (src/context/store.ts; ARCHITECTURE.md,
 * "Folders"): the reader's reads (on the main thread and off it), the record statements that
 * select rows and test a rule or filter against one, the id-list condition, and the record codec
 * of a collection. Built by the composition root (realtimeRepository, src/boot/repositories.ts).
 */
export interface VisibilityRepository {
  reader: Pick<SqlReader, 'all' | 'get'>;
  records: Pick<RecordSql, 'selectAll' | 'rowHolds'>;
  list: Pick<ListSql, 'idIn'>;
  /** the record codec of `c`'s current version (Store.codec) */
  codec(c: Collection): RecordCodec;
}

/** Decides which changes of a batch each audience may see. */
export class Visibility {
  constructor(private repo: VisibilityRepository, private logger: Logger, private limits: RealtimeLimits) {}

  /**
   * Decides the verdicts of a costly batch ahead (decideOffThread), or returns null when they are
   * decided lazily on the main thread as they are needed (visible: the common case).
   */
  decideCostly(c: Collection, audiences: Map<string, Audience>, changes: Change[], upserts: string[], rows: Map<string, unknown[]>): Promise<void> | null {
    // Groups with a filter (what a client, not the app, decides) are decided on the main thread
    // while they are few and short (the common case), else within a short slice of the main
    // thread and then on the reader pool under the filter budget, so a flood of costly filters
    // cannot hold the event loop (ARCHITECTURE.md "Realtime"). Groups without one keep their
    // query (the app's rule) on the main thread, decided as they are needed.
    const filtered: Audience[] = [];
    let sqlChars = 0;
    for (const a of audiences.values()) {
      if (a.owner || a.filterSql === null) continue;
      filtered.push(a);
      sqlChars += a.filterSql.length + (a.rule.kind === 'where' ? a.rule.sql.length : 0);
    }
    if (filtered.length > OFF_THREAD_GROUPS || sqlChars > OFF_THREAD_SQL_CHARS) {
      // verdicts are for the callers as they are now: one that changes meanwhile gets nothing
      for (const a of audiences.values()) a.authVersions = a.subs.map((sub) => sub.client.authVersion);
      return this.decideOffThread(c, filtered, changes, upserts, rows);
    }
    return null;
  }

  /**
   * Decides the verdicts of the filter groups `all`: those with short SQL on the main thread for at most
   * MAIN_THREAD_SLICE_MS, the rest on the reader pool (a pool read: a worker on SQLite, the
   * connection pool on PostgreSQL) within `filterBudgetMs` for all of them, queue time included.
   * A group not decided in time, or whose query failed, fails closed: its subscribers get nothing
   * of this batch, and the groups are logged.
   */
  private async decideOffThread(c: Collection, all: Audience[], changes: Change[], upserts: string[], rows: Map<string, unknown[]>): Promise<void> {
    const ids = upserts.filter((id) => rows.has(id));
    const deletes = changes.filter((ch) => ch.op === 'delete' && ch.old);
    const audiences: Audience[] = [];
    const sliceEnd = performance.now() + MAIN_THREAD_SLICE_MS;
    for (const a of all) {
      const cheap = a.filterSql!.length + (a.rule.kind === 'where' ? a.rule.sql.length : 0) <= CHEAP_SQL_CHARS;
      if (!cheap || performance.now() >= sliceEnd) {
        audiences.push(a);
        continue;
      }
      try {
        await this.decideOne(c, a, ids, deletes);
      } catch (err) {
        a.visible = new Set();
        a.deleted = new Set();
        this.logger.warn(`realtime: a filter group of ${c.name} not decided (${(err as Error)?.message ?? String(err)}); its subscribers get nothing of this batch`);
      }
    }
    if (audiences.length === 0) return;
    const budget = this.limits.filterBudgetMs;
    const deadline = budget > 0 ? performance.now() + budget : Infinity;
    const left = () => (budget > 0 ? Math.max(1, deadline - performance.now()) : 0);
    const reader = this.repo.reader;
    let failed = 0;
    let reason = '';
    const decide = async (a: Audience): Promise<void> => {
      const visible = new Set<string>();
      const deleted = new Set<string>();
      try {
        for (let i = 0; i < ids.length; i += 500) {
          const q = this.visibleQuery(c, a, ids.slice(i, i + 500));
          for (const r of await reader.all(q.sql, q.params, { pool: true, budgetMs: left() })) visible.add(String(r[0]));
        }
        for (const ch of deletes) {
          if (performance.now() >= deadline) throw new ReadBudgetExceeded(budget);
          const q = this.rowHoldsQuery(c, a, ch.old!);
          if ((await reader.get(q.sql, q.params, { pool: true, budgetMs: left() })) !== undefined) deleted.add(ch.id);
        }
      } catch (err) {
        failed++;
        reason = err instanceof ReadBudgetExceeded ? `over the budget of ${budget} ms` : (err as Error)?.message ?? String(err);
        a.visible = new Set();
        a.deleted = new Set();
        return;
      }
      a.visible = visible;
      a.deleted = deleted;
    };
    // handing a read to the pool copies its SQL (tens of KB for a relation filter): a slice of
    // groups per turn of the event loop, so requests are served between slices
    const running: Array<Promise<void>> = [];
    for (let i = 0; i < audiences.length; i++) {
      if (i > 0 && i % OFF_THREAD_SLICE === 0) await new Promise<void>((r) => setImmediate(r));
      running.push(decide(audiences[i]));
    }
    await Promise.all(running);
    if (failed) this.logger.warn(`realtime: ${failed} of ${audiences.length} filter groups of ${c.name} not decided (${reason}); their subscribers get nothing of this batch`);
  }

  /** Whether a change is visible to an audience (rule and filter; decided once per batch and audience). */
  visible(c: Collection, a: Audience, ch: Change, upserts: string[], rows: Map<string, unknown[]>): boolean {
    const open = a.rule.kind === 'all' && a.filterSql === null;
    if (ch.op === 'delete') {
      if (open) return true;
      if (!ch.old) return false; // nothing to decide on: fail closed
      if (a.owner) return ownerMatches(a.owner.column, ch.old[a.owner.field], a.owner.principal);
      // decided ahead (decideQueried, decideCostly); undecided: fail closed
      return a.deleted?.has(ch.id) ?? false;
    }
    if (open) return rows.has(ch.id);
    if (a.owner) {
      const row = rows.get(ch.id);
      return row !== undefined && ownerMatches(a.owner.column, row[a.owner.column.index], a.owner.principal);
    }
    // decided ahead (decideQueried, decideCostly); undecided: fail closed
    return a.visible?.has(ch.id) ?? false;
  }

  /**
   * Decides ahead, through the reader's promise reads, the verdicts of the groups a query decides
   * (neither open to all nor owner-shaped) that decideCostly left: `visible` for the batch's
   * upserts, `deleted` for its deletes. Null when no group needs a query. On SQLite the reads
   * answer at once, on PostgreSQL from the pool (the main thread is not blocked meanwhile).
   */
  decideQueried(c: Collection, audiences: Map<string, Audience>, changes: Change[], upserts: string[], rows: Map<string, unknown[]>): Promise<void> | null {
    const need: Audience[] = [];
    for (const a of audiences.values()) if (!a.owner && !(a.rule.kind === 'all' && a.filterSql === null) && !a.visible) need.push(a);
    if (!need.length) return null;
    const ids = upserts.filter((id) => rows.has(id));
    const deletes = changes.filter((ch) => ch.op === 'delete' && ch.old);
    return (async () => {
      for (const a of need) await this.decideOne(c, a, ids, deletes);
    })();
  }

  /** One group's verdicts on the batch's upserts `ids` (their rows read) and `deletes`, read on the main thread's reader. */
  private async decideOne(c: Collection, a: Audience, ids: string[], deletes: Change[]): Promise<void> {
    const visible = new Set<string>();
    for (let i = 0; i < ids.length; i += 500) {
      const q = this.visibleQuery(c, a, ids.slice(i, i + 500));
      for (const r of await this.repo.reader.all(q.sql, q.params)) visible.add(String(r[0]));
    }
    const deleted = new Set<string>();
    for (const ch of deletes) if (await this.oldRowHolds(c, a, ch.old!)) deleted.add(ch.id);
    a.visible = visible;
    a.deleted = deleted;
  }

  /** The query answering which of `ids` (at most 500) an audience's rule and filter let it see. */
  private visibleQuery(c: Collection, a: Audience, ids: string[]): { sql: string; params: SqlValue[] } {
    const where = new Where();
    where.add(this.repo.list.idIn(ids.length), ids);
    where.addRule(a.rule);
    if (a.filterSql) where.add(a.filterSql, a.filterParams);
    return { sql: this.repo.records.selectAll(c, 'r."id"', where.sql()), params: where.params };
  }

  /** The rule and filter over a deleted row, as it was. */
  private async oldRowHolds(c: Collection, a: Audience, old: Record<string, unknown>): Promise<boolean> {
    try {
      const q = this.rowHoldsQuery(c, a, old);
      return (await this.repo.reader.get(q.sql, q.params)) !== undefined;
    } catch {
      return false; // e.g. a column dropped since: fail closed
    }
  }

  /** The query that answers a row when an audience's rule and filter hold for a deleted row `old`. */
  private rowHoldsQuery(c: Collection, a: Audience, old: Record<string, unknown>): { sql: string; params: SqlValue[] } {
    const columns = Object.keys(old);
    const where = new Where();
    where.addRule(a.rule);
    if (a.filterSql) where.add(a.filterSql, a.filterParams);
    const params: SqlValue[] = columns.map((k) => bindValue(old[k]));
    for (const p of where.params) params.push(p);
    return { sql: this.repo.records.rowHolds(columns, where.sql(), c), params };
  }

  /** Rows (codec columns) of records by id, without expired ones. */
  async rowsById(c: Collection, ids: string[]): Promise<Map<string, unknown[]>> {
    const codec = this.repo.codec(c);
    const out = new Map<string, unknown[]>();
    for (let i = 0; i < ids.length; i += 500) {
      const chunk = ids.slice(i, i + 500);
      const where = new Where();
      where.add(this.repo.list.idIn(chunk.length), chunk);
      where.addTtl(c);
      for (const row of await this.repo.reader.all(this.repo.records.selectAll(c, codec.columns, where.sql()), where.params)) out.set(String(row[0]), row);
    }
    return out;
  }
}
