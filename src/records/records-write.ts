/**
 * Record writes: create, update (including the self-service password change) and delete, each as
 * one write job on the writer thread (docs/api.md, "Records", "Update a record").
 *
 * Rules are enforced inside the job: a create inserts then requires the new row to satisfy the
 * create rule (403 otherwise, rolled back); update and delete carry the rule in their WHERE and
 * require a changed row (404 otherwise). Relation targets are checked in the same job. Integrity
 * conflicts answer 409.
 */
import { ApiError, failedGuardStep, type FieldError } from '../errors/api-error.js';
import type { Collection, Field } from '../model/schema.js';
import type { Principal, RuleCheck } from '../rules/access.js';
import type { RuleContext, RuleRequest } from '../rules/compiler.js';
import type { RecordWriteRepository } from './record-repositories.js';
import type { StepResult, WriteStep } from '../store/write-job.js';
import { bindValue, type SqlValue } from '../store/bind.js';
import { encodeValue, nowDate } from '../collections/fields/index.js';
import { ID_PATTERN, newRecordId, randomToken } from './ids.js';
import { checkNewPassword, hashPassword, verifyPassword } from '../auth/passwords.js';
import { minPasswordLength } from '../auth/auth-defaults.js';
import { AUTH_WRITE_STRIPPED } from '../auth/auth-fields.js';
import type { FilePlan, RecordFiles, Uploads } from '../files/record-files.js';
import { encryptStored } from './encryption.js';
import { RecordLifecycle, type RecordEventHandlers, type RequestRef } from './lifecycle.js';
import { boundedCache } from '../cache/bounded.js';

type Body = Record<string, unknown>;
type Errors = Record<string, FieldError>;

const CREATE_DENIED = () => new ApiError(403, 'forbidden', 'You are not allowed to create this record.');

const isObject = (v: unknown): v is Body => typeof v === 'object' && v !== null && !Array.isArray(v);
/** True when `o` has an own enumerable key (no key array built). */
function hasKeys(o: object): boolean {
  for (const _ in o) return true;
  return false;
}
const isMulti = (f: Field) => ((f.options.maxSelect as number | undefined) ?? 1) > 1;

/** A validated create before its write job (see RecordWriter.prepareCreate). */
interface CreateDraft {
  id: string;
  check: RuleCheck;
  /** columns and values in INSERT order */
  cols: string[];
  vals: SqlValue[];
  /** the new password to hash (auth records), or null */
  password: string | null;
  /** the client chose the id (an auth record's id must then be new to every auth collection) */
  chosenId: boolean;
}

export interface WriteResult {
  /** the stored row as selected by the codec's columns */
  row: unknown[];
  /** true when an auth record's password (and token key) changed */
  passwordChanged: boolean;
}

/** Where a write's steps go: the writer, a WriteBatch, or a wrapper that adds steps to the job (an upload's completion receipt). */
export interface StepSink {
  write(steps: WriteStep[]): Promise<StepResult[]>;
}

/**
 * Several record writes committed as one write job (all or nothing): each write hands its steps
 * to `write` (or to its `slot`) instead of the writer; `commit()` sends them together once every
 * write has handed its steps in or failed before that (then nothing is written), and gives each
 * write its results. Driven by runWriteBatch below.
 */
export class WriteBatch {
  private parts: Array<{ order: number; steps: WriteStep[]; resolve: (r: StepResult[]) => void; reject: (e: unknown) => void }> = [];
  private expected = Infinity;
  private failures = 0;
  private onReady: (() => void) | null = null;
  /** after a failed commit: the order (slot) of the write whose step's guard failed, when known */
  culprit: number | null = null;

  constructor(private writer: { write(steps: WriteStep[]): Promise<StepResult[]> }) {}

  /** Collects one write's steps; resolves with its results after the commit. */
  write(steps: WriteStep[]): Promise<StepResult[]> {
    return this.add(steps, Number.MAX_SAFE_INTEGER);
  }

  /**
   * A sink for the write at position `order`: its steps run in the job in that order, whenever
   * they arrive (an auth create hashes its password first), so a write may rely on an earlier
   * one of the batch (a relation to a record created before it).
   */
  slot(order: number): StepSink {
    return { write: (steps) => this.add(steps, order) };
  }

  private add(steps: WriteStep[], order: number): Promise<StepResult[]> {
    const p = new Promise<StepResult[]>((resolve, reject) => this.parts.push({ order, steps, resolve, reject }));
    this.check();
    return p;
  }

  /** Resolves once `n` writes have handed in their steps or failed before (see failedEarly). */
  whenAll(n: number): Promise<void> {
    this.expected = n;
    return new Promise((resolve) => {
      this.onReady = resolve;
      this.check();
    });
  }

  /** Counts a write that failed before handing in steps (validation, a rule, a hook). */
  failedEarly(): void {
    this.failures++;
    this.check();
  }

  private check(): void {
    if (this.parts.length + this.failures < this.expected || !this.onReady) return;
    const ready = this.onReady;
    this.onReady = null;
    ready();
  }

  /** How many writes have handed in their steps. */
  get size(): number {
    return this.parts.length;
  }

  /** Commits every collected write in one job, or (with `cancel`) fails them all unwritten. */
  async commit(cancel?: unknown): Promise<void> {
    const parts = this.parts.sort((a, b) => a.order - b.order); // stable: arrival order within one order
    this.parts = [];
    if (cancel !== undefined) {
      for (const p of parts) p.reject(cancel);
      return;
    }
    try {
      const results = await this.writer.write(parts.flatMap((p) => p.steps));
      let at = 0;
      for (const p of parts) {
        p.resolve(results.slice(at, at + p.steps.length));
        at += p.steps.length;
      }
    } catch (err) {
      const step = failedGuardStep(err);
      if (step !== null) {
        // the write that owns the failing step (its guard: a rule, a relation, a missing record)
        let at = 0;
        for (const p of parts) {
          if (step < at + p.steps.length) {
            this.culprit = p.order;
            break;
          }
          at += p.steps.length;
        }
      }
      for (const p of parts) p.reject(err);
    }
  }
}

/** What runWriteBatch answers: every write's settled outcome, and the failure that wrote nothing. */
export interface BatchOutcome<T> {
  /** each write's result or error, in the writes' order */
  settled: PromiseSettledResult<T>[];
  /**
   * the write that failed the batch (then nothing was written): the first to fail before handing
   * in its steps, else the one whose step failed the commit (a guard: a rule, a relation, a
   * missing record), else the first in order; null when all were written
   */
  failed: { index: number; error: unknown } | null;
}

/**
 * Runs `writes` as one write job, all or nothing (the app handle's `batch`, src/app/runtime.ts,
 * and `POST /api/batch`, src/api/batch.ts, docs/api.md "Batch"). Each write is given the sink its
 * steps go to (its slot of the batch, so the job runs them in the writes' order) and does what a
 * single write does around its job (rules, hooks, files). One failure before the commit cancels
 * it; the others then reject with that failure.
 */
export async function runWriteBatch<T>(writer: StepSink, writes: Array<(sink: StepSink) => Promise<T>>): Promise<BatchOutcome<T>> {
  const batch = new WriteBatch(writer);
  const early: { first: { index: number; error: unknown } | null; committing: boolean } = { first: null, committing: false };
  const runs = writes.map((w, i) => w(batch.slot(i)));
  // every write either hands in its steps or fails first; one failure writes nothing
  runs.forEach((r, i) => r.catch((error: unknown) => {
    if (early.committing) return;
    early.first ??= { index: i, error };
    batch.failedEarly();
  }));
  await batch.whenAll(writes.length);
  early.committing = true;
  await batch.commit(early.first?.error);
  const settled = await Promise.allSettled(runs);
  if (early.first) return { settled, failed: early.first };
  const culprit = batch.culprit !== null && settled[batch.culprit]?.status === 'rejected' ? batch.culprit : -1;
  const index = culprit >= 0 ? culprit : settled.findIndex((x) => x.status === 'rejected');
  return { settled, failed: index < 0 ? null : { index, error: (settled[index] as PromiseRejectedResult).reason } };
}

/**
 * For a writer that holds the data directory alone (`svc import`): true for a related record
 * known to exist, whose in-job existence guard can then be left out (nothing else can delete it
 * meanwhile).
 */
export type RelationsKnown = (target: Collection, id: string) => boolean;

/** Record creates, updates and deletes (this module's header) over a RecordWriteRepository. */
export class RecordWriter {
  private ruleVerdicts = boundedCache<string, boolean>(10_000);
  private insertSqls = boundedCache<string, string>(1000);
  private guards = boundedCache<string, { sql: string; fail: NonNullable<WriteStep['fail']> }>(1000);

  /**
   * @param store     the record statements, rules, codecs, point reads and the writer (RecordWriteRepository)
   * @param files     file fields (uploads, cleanup after commit); without it they take stored names only
   * @param lifecycle where the record event handlers are registered (./lifecycle.ts): every
   *   create, update and delete of this writer fires them
   * @param relationsKnown see RelationsKnown; null (the server): every relation is guarded inside the write job
   */
  constructor(private store: RecordWriteRepository, private files?: RecordFiles, readonly lifecycle: RecordLifecycle = new RecordLifecycle(), private relationsKnown: RelationsKnown | null = null) {}

  /**
   * Creates a record; 403 on a denied create rule, 400 on validation, 409 on conflicts.
   * `uploads`: files of a multipart body by form name (see record-files.ts); `request`: the
   * request it serves, for the event handlers' logs. Fires beforeCreate (which may change `body`
   * or refuse) and afterCreate (./lifecycle.ts).
   *
   * A record of a base collection without file changes or handlers (the hot path) is validated
   * synchronously and becomes one write job at once: no async frame holds the request's state
   * while it waits for the group commit. Auth records (password hashing) and file changes take
   * the async path.
   */
  create(c: Collection, principal: Principal | null, body: unknown, uploads: Uploads | null = null, batch?: StepSink, request?: RequestRef): Promise<WriteResult> {
    const on = this.lifecycle.of(c);
    if (on) return this.createWithEvents(on, c, principal, body, uploads, batch, request);
    return this.createPlain(c, principal, body, uploads, batch, request);
  }

  private async createWithEvents(on: RecordEventHandlers, c: Collection, principal: Principal | null, body: unknown, uploads: Uploads | null, batch: StepSink | undefined, request: RequestRef | undefined): Promise<WriteResult> {
    if (!isObject(body)) throw ApiError.badRequest('The request body must be a JSON object.');
    if (on.beforeCreate) await on.beforeCreate({ collection: c, principal, record: body, request });
    const out = await this.createPlain(c, principal, body, uploads, batch, request);
    if (on.afterCreate) await on.afterCreate({ collection: c, principal, record: this.store.codec(c).fromRow(out.row), request });
    return out;
  }

  /** `request`: the HTTP request served, for the create rule's `@request.query.*` / `.headers.*` */
  private createPlain(c: Collection, principal: Principal | null, body: unknown, uploads: Uploads | null, batch?: StepSink, request?: RuleRequest): Promise<WriteResult> {
    let touchesFiles: boolean;
    try {
      if (!isObject(body)) throw ApiError.badRequest('The request body must be a JSON object.');
      touchesFiles = !!this.files?.touches(c, body, uploads);
      if (c.type !== 'auth' && !touchesFiles) return this.insert(c, this.prepareCreate(c, principal, body, null, {}, undefined, request), body, null, undefined, batch);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.createAsync(c, principal, body, uploads, touchesFiles, batch, request);
  }

  /** The create of an auth record (password hash) or of one with file changes (`touchesFiles`). */
  private async createAsync(c: Collection, principal: Principal | null, body: Body, uploads: Uploads | null, touchesFiles: boolean, batch?: StepSink, request?: RuleRequest): Promise<WriteResult> {
    const errors: Errors = {};
    const filePlan = touchesFiles && this.files ? await this.files.plan(c, body, uploads, new Map(), errors) : null;
    const draft = this.prepareCreate(c, principal, body, filePlan, errors, undefined, request);
    if (draft.password !== null) {
      draft.cols.push('passwordHash');
      draft.vals.push(await hashPassword(draft.password));
    }
    return this.insert(c, draft, body, filePlan, undefined, batch);
  }

  /**
   * Creates the auth record of a first OAuth2 sign-in (docs/auth.md, "OAuth2 and passkeys": the
   * first sign-in creates the record): `body` is judged by the create rule as an anonymous caller's
   * would be, `verified` is what the provider vouches for, there is no password (password sign-in
   * fails until one is set through a reset), and `extra(id)` (the provider link) runs in the same
   * write job, so the record and its link exist together or not at all. Fires beforeCreate and
   * afterCreate like any create (./lifecycle.ts), the caller anonymous.
   * @returns the new record's id
   * @throws ApiError 403 when the create rule denies, 400 on validation, 409 on a conflict (email
   *   taken), or what a beforeCreate handler throws
   */
  async createExternal(c: Collection, body: Body, verified: boolean, extra: (id: string) => WriteStep[], request?: RequestRef): Promise<string> {
    const on = this.lifecycle.of(c);
    if (on?.beforeCreate) await on.beforeCreate({ collection: c, principal: null, record: body, request });
    const draft = this.prepareCreate(c, null, body, null, {}, { verified }, request, 'oauth2');
    const out = await this.insert(c, draft, body, null, extra(draft.id));
    if (on?.afterCreate) await on.afterCreate({ collection: c, principal: null, record: this.store.codec(c).fromRow(out.row), request });
    return draft.id;
  }

  /**
   * The validated row of a create, without the password hash (hashing is async): 403 on a denied
   * create rule, 400 with every field error (those already in `errors` included). `external`: an
   * OAuth2 sign-up (`verified` from the provider, no password). `request` and `context`: the
   * create rule's `@request.query.*`, `.headers.*` and `@request.context` (RuleBook.check).
   */
  private prepareCreate(c: Collection, principal: Principal | null, body: Body, filePlan: FilePlan | null, errors: Errors, external?: { verified: boolean }, request?: RuleRequest, context?: RuleContext): CreateDraft {
    const check = this.store.rules.check(c, 'createRule', principal, body, 'POST', request, context);
    if (check.kind === 'deny') throw ApiError.forbidden('You are not allowed to create records in this collection.');
    const superuser = !!principal?.superuser;
    let id = newRecordId();
    let chosenId = false;
    if (body.id !== undefined && body.id !== '') {
      if (typeof body.id === 'string' && ID_PATTERN.test(body.id)) {
        id = body.id;
        chosenId = true;
      } else errors.id = { code: 'validation_pattern', message: 'Must be 15 lowercase letters or digits.' };
    }
    const now = nowDate();
    const cols: string[] = ['id', 'created', 'updated'];
    const vals: SqlValue[] = [id, now, now];
    for (const f of c.fields) {
      if (f.type === 'autodate') {
        cols.push(f.name);
        vals.push(f.options.onCreate === false ? null : now);
        continue;
      }
      let input = f.type === 'file' && filePlan ? filePlan.values.get(f.name) : body[f.name];
      if (c.type === 'auth' && f.name === 'verified' && !superuser) input = external?.verified ?? false; // forced false on signup
      const res = encodeValue(f, input, 'create');
      if ('error' in res) errors[f.name] = res.error;
      else {
        cols.push(f.name);
        vals.push(f.options.encrypted ? encryptStored(c.id, f.id, id, res.value) : res.value);
      }
    }
    let password: string | null = null;
    if (c.type === 'auth') {
      if (!external) password = checkNewPassword(body, minPasswordLength(c), errors);
      cols.push('tokenKey', 'token_epoch');
      vals.push(randomToken(24), 0);
    }
    if (hasKeys(errors)) throw ApiError.validation(errors);
    return { id, check, cols, vals, password, chosenId };
  }

  /** Queues the INSERT of a prepared create with its relation and create-rule guards. */
  private insert(c: Collection, draft: CreateDraft, body: Body, filePlan: FilePlan | null, extra?: WriteStep[], batch?: StepSink): Promise<WriteResult> {
    const { id, check, cols, vals } = draft;
    const steps: WriteStep[] = this.relationGuards(c, body);
    if (draft.chosenId && c.type === 'auth') {
      const guard = this.identityGuard(c, id);
      if (guard) steps.push(guard);
    }
    steps.push({ sql: this.insertSql(c, cols), params: vals, creates: { collection: c.id, id } });
    if (extra) steps.push(...extra);
    if (check.kind === 'where') {
      if (!check.readsRecord) {
        // A rule on request data alone (`@request.auth.id != ''`) needs no row: it is decided here
        // on the read connection, and the writer thread (the throughput limit) does not see it.
        const holds = this.requestRuleHolds(check.sql, check.params);
        // a verdict known already decides at once; one read on a miss is awaited first
        if (holds instanceof Promise) {
          return holds.then((ok) => {
            if (!ok) throw CREATE_DENIED();
            return this.queueInsert(c, id, filePlan, steps, vals, batch);
          });
        }
        if (!holds) throw CREATE_DENIED();
      } else {
        steps.push({
          sql: this.store.sql.records.createRuleGuard(c, check.sql),
          params: [id, ...check.params],
          expect: 'row',
          fail: { status: 403, code: 'forbidden', message: 'You are not allowed to create this record.' },
        });
      }
    }
    return this.queueInsert(c, id, filePlan, steps, vals, batch);
  }

  /** Queues an insert's steps (with its files) and answers the stored row. */
  private queueInsert(c: Collection, id: string, filePlan: FilePlan | null, steps: WriteStep[], vals: SqlValue[], batch?: StepSink): Promise<WriteResult> {
    // The stored row is exactly what was inserted (no column defaults or triggers change it), so it
    // is answered from these values instead of a read-back statement on the writer thread.
    const row = vals.slice(0, 3 + c.fields.length);
    return this.withFiles(c, id, filePlan, () => this.queue(steps, batch)).then(() => ({ row, passwordChanged: false }), (e) => {
      throw this.typedFailure(e);
    });
  }

  /**
   * One auth identity, one collection: a client-chosen id of an auth record must not exist in any
   * other auth collection (rules compare `@request.auth.id` with relation values, which name a
   * record by id alone). Checked inside the write job, so two concurrent creates cannot both pass;
   * refused as 409, like an id taken in the same collection.
   */
  private identityGuard(c: Collection, id: string): WriteStep | null {
    const others = this.store.registry.all().filter((o) => o.type === 'auth' && o.id !== c.id);
    if (!others.length) return null;
    return {
      sql: this.store.sql.records.idFreeIn(others),
      params: others.map(() => id),
      expect: 'row',
      fail: { status: 409, code: 'conflict', message: 'The value of "id" conflicts with an existing record.' },
    };
  }

  /**
   * The INSERT of a create. Within one schema version of a collection the columns a create sets
   * are fixed (system columns, every field, auth columns) but for an auth record's optional
   * password hash, so the column count keys the cached statement text.
   */
  private insertSql(c: Collection, cols: string[]): string {
    const key = `${c.id}\u0000${this.store.registry.version(c.id)}\u0000${cols.length}`;
    let sql = this.insertSqls.get(key);
    if (sql === undefined) {
      sql = this.store.sql.records.insert(c, cols);
      this.insertSqls.set(key, sql);
    }
    return sql;
  }

  /**
   * The verdict of a rule that reads no record: a pure function of its SQL and bound values, so it
   * is cached by them (bounded) and SQLite is asked once per distinct caller, not once per create.
   */
  private requestRuleHolds(sql: string, raw: SqlValue[]): boolean | Promise<boolean> {
    let key = sql;
    const params: SqlValue[] = [];
    for (const r of raw) {
      const p = bindValue(r);
      params.push(p);
      key += `\u0000${typeof p}:${String(p)}`;
    }
    const v = this.ruleVerdicts.get(key);
    if (v !== undefined) return v;
    // the verdict depends on the bound values only (no table is read), so it never goes stale
    return this.store.reader.get(this.store.sql.records.requestRuleHolds(sql), params).then((row) => {
      this.ruleVerdicts.set(key, !!row);
      return !!row;
    });
  }

  /**
   * Updates a record; 404 when absent or the update rule fails; 409 when a concurrent update
   * changed a file field this one changes. `uploads` and `request` as for create. Fires
   * beforeUpdate (with the changes, which it may alter, or refuse) and afterUpdate.
   */
  async update(c: Collection, id: string, principal: Principal | null, body: unknown, uploads: Uploads | null = null, batch?: StepSink, request?: RequestRef): Promise<WriteResult> {
    const on = this.lifecycle.of(c);
    if (!on) return this.updatePlain(c, id, principal, body, uploads, batch, request);
    if (!isObject(body)) throw ApiError.badRequest('The request body must be a JSON object.');
    if (on.beforeUpdate) await on.beforeUpdate({ collection: c, principal, record: body, request });
    const out = await this.updatePlain(c, id, principal, body, uploads, batch, request);
    if (on.afterUpdate) await on.afterUpdate({ collection: c, principal, record: this.store.codec(c).fromRow(out.row), request });
    return out;
  }

  private async updatePlain(c: Collection, id: string, principal: Principal | null, body: unknown, uploads: Uploads | null, batch?: StepSink, request?: RuleRequest): Promise<WriteResult> {
    if (!isObject(body)) throw ApiError.badRequest('The request body must be a JSON object.');
    // no record has such an id: 404 before any upload is written under it (fuzz seed 265793528
    // found a 500 when a multipart update named an id with a backtick)
    if (!ID_PATTERN.test(id)) throw ApiError.notFound();
    const check = this.store.rules.check(c, 'updateRule', principal, body, 'PATCH', request);
    if (check.kind === 'deny') throw ApiError.notFound();
    const superuser = !!principal?.superuser;
    const errors: Errors = {};
    const sets: string[] = [];
    const vals: SqlValue[] = [];
    const set = (name: string, v: SqlValue) => {
      sets.push(this.store.sql.records.setTerm(name));
      vals.push(v);
    };
    const now = nowDate();
    const filePlan = this.files?.touches(c, body, uploads)
      ? await this.files.plan(c, body, uploads, await this.files.currentValues((sql, p) => this.store.reader.get(sql, p), c, id), errors)
      : null;

    for (const f of c.fields) {
      if (f.type === 'autodate') {
        if (f.options.onUpdate) set(f.name, now);
        continue;
      }
      const fromPlan = f.type === 'file' && filePlan !== null;
      const input = fromPlan ? filePlan.values.get(f.name) : body[f.name];
      if (fromPlan ? input === undefined : !(f.name in body)) continue;
      if (c.type === 'auth' && !superuser && (f.name === 'verified' || f.name === 'email')) {
        errors[f.name] = { code: 'validation_value', message: `Only superusers can change "${f.name}".` };
        continue;
      }
      const res = encodeValue(f, input, 'update');
      if ('error' in res) errors[f.name] = res.error;
      else set(f.name, f.options.encrypted ? encryptStored(c.id, f.id, id, res.value) : res.value);
    }

    let passwordChanged = false;
    if (c.type === 'auth' && 'password' in body) {
      await this.passwordChange(c, id, principal, body, check);
      const pw = checkNewPassword(body, minPasswordLength(c), errors);
      if (pw !== null && !Object.keys(errors).length) {
        set('passwordHash', await hashPassword(pw));
        set('tokenKey', randomToken(24));
        passwordChanged = true;
      }
    }
    if (Object.keys(errors).length) throw ApiError.validation(errors);
    set('updated', now);

    const codec = this.store.codec(c);
    const steps: WriteStep[] = [...this.relationGuards(c, body)];
    const fileGuard = filePlan && this.files?.guard(c, id, filePlan);
    if (fileGuard) steps.push(fileGuard);
    steps.push({
      sql: this.store.sql.records.update(c, sets, check.kind === 'where' ? check.sql : ''),
      params: [...vals, id, ...(check.kind === 'where' ? check.params : [])],
      expect: 'change',
      fail: { status: 404, code: 'not_found', message: 'The requested resource was not found.' },
    });
    steps.push({ sql: this.store.sql.records.rowById(c, codec.columns), params: [id], returnRows: true });
    const results = await this.withFiles(c, id, filePlan, () => this.run(steps, batch));
    return { row: results[results.length - 1].rows![0], passwordChanged };
  }

  /**
   * Runs a write job with its file changes: new files are written first (under a sweep hold);
   * after the commit the files the record dropped are deleted, after a failure the new ones.
   */
  private withFiles<T>(c: Collection, id: string, plan: FilePlan | null, job: () => Promise<T>): Promise<T> {
    // Without files the job's own promise is returned: no extra async frame a write.
    if (!plan || !this.files) return job();
    return this.withFileChanges(c, id, plan, job);
  }

  private async withFileChanges<T>(c: Collection, id: string, plan: FilePlan, job: () => Promise<T>): Promise<T> {
    const files = this.files!;
    const release = await files.writeNew(c, id, plan);
    try {
      const out = await job();
      await files.committed(c, id, plan);
      return out;
    } catch (err) {
      await files.failed(c, id, plan);
      throw err;
    } finally {
      release();
    }
  }

  /**
   * Deletes a record (relation triggers cascade or unset references); 404 when absent or denied.
   * Fires beforeDelete (which may refuse) and afterDelete with the record as it was, when it exists.
   */
  async delete(c: Collection, id: string, principal: Principal | null, batch?: StepSink, request?: RequestRef): Promise<void> {
    const on = this.lifecycle.of(c);
    const row = on?.beforeDelete || on?.afterDelete ? await this.store.reader.get(this.store.sql.records.rowById(c, this.store.codec(c).columns), [id]) : undefined;
    const record = row ? this.store.codec(c).fromRow(row) : null;
    if (on?.beforeDelete && record) await on.beforeDelete({ collection: c, principal, record, request });
    await this.deletePlain(c, id, principal, batch, request);
    if (on?.afterDelete && record) await on.afterDelete({ collection: c, principal, record, request });
  }

  private async deletePlain(c: Collection, id: string, principal: Principal | null, batch?: StepSink, request?: RuleRequest): Promise<void> {
    const check = this.store.rules.check(c, 'deleteRule', principal, null, 'DELETE', request);
    if (check.kind === 'deny') throw ApiError.notFound();
    const steps: WriteStep[] = [
      {
        sql: this.store.sql.records.delete(c, check.kind === 'where' ? check.sql : ''),
        params: [id, ...(check.kind === 'where' ? check.params : [])],
        expect: 'change',
        fail: { status: 404, code: 'not_found', message: 'The requested resource was not found.' },
      },
    ];
    if (c.type === 'auth') {
      // The record's links, sessions and pending verification/reset tokens go with it.
      steps.push(...this.store.sql.auth.recordSideRowsDeleteSteps(c.id, id));
    }
    await this.run(steps, batch); // caches drop the record and what cascaded from it through the change feed
    await this.files?.deleted(c, id);
  }

  /**
   * The self-service password change (docs/api.md, "Update a record"): non-superusers must send the
   * right `oldPassword`; a wrong or missing one, an unknown record and a passwordless record all
   * answer the same 400 `Invalid credentials.`. A record the caller may not update answers 404 (the
   * update rule's denial) without its password being compared, so this is no oracle for another
   * account's password; a dummy hash is verified instead, keeping the cost the same.
   */
  private async passwordChange(c: Collection, id: string, principal: Principal | null, body: Body, check: { kind: string; sql?: string; params?: SqlValue[] }): Promise<void> {
    if (principal?.superuser) return;
    const where = check.kind === 'where';
    const row = await this.store.reader.get(this.store.sql.records.passwordAndRule(c, where ? check.sql! : ''), [...(where ? check.params! : []), id]);
    const denied = !!row && Number(row[1]) !== 1;
    const phc = row && !denied && typeof row[0] === 'string' && row[0] ? row[0] : null;
    const old = typeof body.oldPassword === 'string' ? body.oldPassword : '';
    const ok = await verifyPassword(phc, old);
    if (denied) throw ApiError.notFound();
    if (!ok || !phc) throw ApiError.invalidCredentials();
  }

  /** Guards that every relation id in `body` exists in its target collection. */
  private relationGuards(c: Collection, body: Body): WriteStep[] {
    const steps: WriteStep[] = [];
    for (const f of c.fields) {
      if (f.type !== 'relation' || !(f.name in body)) continue;
      const v = body[f.name];
      // A single id (the common case) needs no de-duplication.
      const ids = typeof v === 'string' ? (v === '' ? [] : [v]) : [...new Set((Array.isArray(v) ? v : [v]).filter((x): x is string => typeof x === 'string' && x !== ''))];
      if (!ids.length) continue;
      const target = this.store.registry.byId(String(f.options.collectionId));
      if (!target) continue;
      const known = this.relationsKnown;
      if (known && ids.every((id) => known(target, id))) continue;
      const guard = this.relationGuard(target.name, f, ids.length);
      steps.push({ sql: guard.sql, params: [...ids, ids.length], expect: 'row', fail: guard.fail });
    }
    return steps;
  }

  /** The statement and failure of a relation guard, built once per target, field and id count. */
  private relationGuard(target: string, f: Field, count: number): { sql: string; fail: NonNullable<WriteStep['fail']> } {
    const key = `${target}\u0000${f.name}\u0000${isMulti(f) ? 'n' : '1'}\u0000${count}`;
    let g = this.guards.get(key);
    if (g === undefined) {
      g = {
        sql: this.store.sql.records.relationTargetsExist(target, count),
        fail: { status: 400, code: 'validation_failed', message: 'Failed to validate the submitted data.', data: { [f.name]: { code: 'validation_not_found', message: isMulti(f) ? 'One or more related records do not exist.' : 'The related record does not exist.' } } },
      };
      this.guards.set(key, g);
    }
    return g;
  }

  /**
   * Queues `steps`. A constraint failure rejects as the typed ConstraintViolation or
   * UniqueViolation (src/store/errors/store-errors.ts), which the API answers 409 naming the
   * field (knownApiError, src/errors/api-error.ts); other errors as they are.
   */
  private run(steps: WriteStep[], batch?: StepSink) {
    return this.queue(steps, batch).catch((e) => {
      throw this.typedFailure(e);
    });
  }

  /** `e` as a ConstraintViolation when it is a constraint failure (see run), else itself. */
  private typedFailure(e: unknown): unknown {
    return this.store.sql.dialect.constraintError(e) ?? e;
  }

  /** Queues `steps` (their parameter arrays are built for this job, so they are bound in place). */
  private queue(steps: WriteStep[], batch?: StepSink) {
    for (const s of steps) {
      const p = s.params;
      for (let i = 0; i < p.length; i++) p[i] = bindValue(p[i]);
    }
    return (batch ?? this.store.writer).write(steps);
  }
}

/** Keys of a write body a client may never set directly on auth records (stripped, not rejected). */
export function stripServerManaged(c: Collection, body: unknown): unknown {
  if (c.type !== 'auth' || !isObject(body)) return body;
  const out: Body = {};
  for (const [k, v] of Object.entries(body)) if (!AUTH_WRITE_STRIPPED.has(k)) out[k] = v;
  return out;
}
