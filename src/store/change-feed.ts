/**
 * The change feed (ARCHITECTURE.md, "The change feed"): once per committed transaction of the
 * writer thread, the records it created, updated and deleted, trigger side effects and relation
 * cascades included (workers/writer.ts notes them with TEMP triggers). One in-process stream on the
 * main thread: every cache invalidates from it, and realtime, hooks and cross-instance fan-out
 * subscribe to it.
 *
 * Delivery is in commit order, after the commit is durable and before any write job of that
 * commit is answered: a request that wrote sees its own write in every cache. It is synchronous
 * unless a listener must read before the listeners after it may see the batch (a schema or
 * settings reload: PostgreSQL answers reads only asynchronously): such a listener answers a
 * promise, and the feed holds the batch, and every batch emitted after it, from the later
 * listeners until the promise settles (ChangeFeed.emit).
 */
import { CHANGE_CREATE, CHANGE_DELETE } from './write-job.js';

/** What happened to one record in a transaction (ops merged: create+update is create, …+delete is delete). */
export type ChangeOp = 'create' | 'update' | 'delete';

export interface Change {
  /** collection id */
  collection: string;
  /** record id */
  id: string;
  op: ChangeOp;
  /** the record as stored after the change, when a producer had it at hand (never for deletes) */
  record?: Record<string, unknown>;
  /**
   * A delete's row as it was, by column name (all stored columns, hidden and auth columns
   * included; BLOB columns null): for deciding who may hear of the delete. Never sent to clients.
   */
  old?: Record<string, unknown>;
}

/** The changes of one committed transaction. */
export interface ChangeBatch {
  /** the writer's commit count when this transaction committed (WriterClient.commits) */
  commit: number;
  changes: Change[];
  /**
   * Collections whose changes were too many to list one by one (a bulk update, an encryption
   * migration): treat every record of them as changed.
   */
  truncated: string[];
}

/**
 * A listener of the feed. It may answer a promise (a native one: an async function's) when it
 * must finish something asynchronous (a read) before the listeners subscribed after it see the
 * batch; it must settle (a rejection is reported as an uncaught error, as a throw is) and must
 * not wait on a write job: jobs are answered only after their batch was delivered.
 */
export type ChangeListener = (batch: ChangeBatch) => void | Promise<void>;

/*
 * State that is not records travels on the same feed, under reserved "collection" ids that no
 * collection has (they start with `_`, as system tables do): the writing step names the row it
 * changed as `WriteStep.creates` (op `create` whatever the statement did: a listener reads the
 * row again, and an absent row means deleted), so the entry reaches this process's feed when the
 * job commits and, on PostgreSQL, every other instance's in the same transaction
 * (src/store/pg/cluster-feed.ts). Caches and realtime find no collection under these ids and
 * skip them. A truncated id (a reconnect's "everything changed", an oversized batch) means every
 * row of that kind may have changed.
 */
/** `_settings` rows (id: the setting's key): FeatureService (src/settings/features.ts) reloads them. */
export const SETTINGS_FEED_ID = '_settings';
/**
 * Sticky experiment assignments (id: `JSON.stringify([experiment, subject])`): FeatureService drops
 * what it cached for the subject.
 */
export const ASSIGNMENTS_FEED_ID = '_assignments';
/**
 * Sessions that ended (one revoked, all of a record, all but one; id:
 * `JSON.stringify([collectionId, recordId])`): SessionStore (src/auth/sessions.ts) tells
 * realtime, which re-checks the clients signed in as that record.
 */
export const SESSIONS_FEED_ID = '_sessions';
/**
 * The id, under a reserved id above, of "every row of this kind may have changed" (written by
 * SettingsRowStore.changedAllSteps after app migrations): no setting key holds `/`, and the other
 * kinds' ids are JSON arrays.
 */
export const EVERY_ROW = '/';
/** Every reserved id above (the cluster feed names them in its "everything changed" batch). */
export const STATE_FEED_IDS: readonly string[] = [SETTINGS_FEED_ID, ASSIGNMENTS_FEED_ID, SESSIONS_FEED_ID];

/** Reports a listener's failure without stopping the feed: thrown again outside it, as an uncaught error. */
function rethrow(err: unknown): void {
  queueMicrotask(() => {
    throw err;
  });
}

/**
 * The stream: subscribe, and the writer client emits. A listener that throws does not stop the
 * others. Listeners see the batches in commit order, each batch in subscription order; a listener
 * that answers a promise holds the batch from the listeners after it until it settles, and
 * the batches emitted meanwhile wait behind it (the backlog), so no listener sees a batch before
 * an earlier one.
 */
export class ChangeFeed {
  private listeners: ChangeListener[] = [];
  /** Batches emitted while an earlier one waits on a listener, in order, with what tells their emitter; null when none waits. */
  private backlog: Array<{ batch: ChangeBatch; delivered: () => void }> | null = null;

  /**
   * @param onLate called after a batch whose delivery waited (on a listener, or in the backlog)
   *   has reached every listener: the writer counts it as one more commit (its `commits`), so a
   *   read cached meanwhile, under a commit count whose batch had not reached the caches yet, is
   *   not served after it (src/cache/caches.ts: caches are valid for one commit count)
   */
  constructor(private readonly onLate: (() => void) | null = null) {}

  /** Adds a listener; returns the function that removes it. */
  subscribe(listener: ChangeListener): () => void {
    this.listeners = [...this.listeners, listener];
    return () => {
      this.listeners = this.listeners.filter((l) => l !== listener);
    };
  }

  /**
   * Delivers one batch to every listener, in subscription order. Answers undefined when every
   * listener has it on return (the common case), else a promise that settles (never rejects)
   * once the last listener has it: the writer answers the batch's jobs then.
   */
  emit(batch: ChangeBatch): Promise<void> | undefined {
    if (this.backlog) return new Promise<void>((resolve) => this.backlog!.push({ batch, delivered: resolve }));
    const waiting = this.deliver(batch, this.listeners, 0, false);
    if (!waiting) return undefined;
    this.backlog = [];
    // told before the backlog moves on, so the batches' jobs are answered in commit order too
    return new Promise<void>((resolve) => {
      void waiting.then(() => {
        resolve();
        this.caughtUp();
      });
    });
  }

  /** Hands `batch` to `listeners` from `from` on; a promise when one of them answered one (the rest follow it). */
  private deliver(batch: ChangeBatch, listeners: readonly ChangeListener[], from: number, resumed: boolean): Promise<void> | undefined {
    for (let i = from; i < listeners.length; i++) {
      const l = listeners[i];
      // after a wait, a listener removed meanwhile is skipped
      if (resumed && !this.listeners.includes(l)) continue;
      let r: void | Promise<void>;
      try {
        r = l(batch);
      } catch (err) {
        rethrow(err);
        continue;
      }
      if (r instanceof Promise) {
        return r.then(undefined, rethrow).then(() => this.deliver(batch, listeners, i + 1, true));
      }
    }
    return undefined;
  }

  /** After a batch that waited reached every listener: counts it late, then delivers the backlog in order until one waits again. */
  private caughtUp(): void {
    this.onLate?.();
    const backlog = this.backlog!;
    while (backlog.length) {
      const next = backlog.shift()!;
      const waiting = this.deliver(next.batch, this.listeners, 0, false);
      if (waiting) {
        void waiting.then(() => {
          next.delivered();
          this.caughtUp();
        });
        return;
      }
      this.onLate?.();
      next.delivered();
    }
    this.backlog = null;
  }
}

/**
 * A commit's batch: the records its committed jobs created (WriteStep.creates, in job order) and
 * the writer's notes in wire form (write-job.ts: flat `collection, id, op, old` quads), merged per
 * record: a create then updates is a create, a create then a delete is a delete. (A record
 * deleted and created again with the same id within one group commit reads as a delete: its
 * caches are dropped either way.)
 */
export function decodeChanges(commit: number, created: Change[], flat: unknown[] | null, truncated: string[] | null): ChangeBatch {
  if (!flat) return { commit, changes: created, truncated: truncated ?? [] };
  const noted: Change[] = [];
  for (let i = 0; i < flat.length; i += 4) {
    const op = flat[i + 2] as number;
    const ch: Change = { collection: String(flat[i]), id: String(flat[i + 1]), op: op === CHANGE_CREATE ? 'create' : op === CHANGE_DELETE ? 'delete' : 'update' };
    if (typeof flat[i + 3] === 'string') ch.old = parseOld(flat[i + 3] as string);
    noted.push(ch);
  }
  if (created.length === 0) return { commit, changes: noted, truncated: truncated ?? [] };
  const byKey = new Map<string, Change>();
  for (const ch of created) byKey.set(`${ch.collection}\u0000${ch.id}`, ch);
  const changes = [...created];
  for (const ch of noted) {
    const mine = byKey.get(`${ch.collection}\u0000${ch.id}`);
    if (!mine) changes.push(ch);
    else if (ch.op === 'delete') {
      mine.op = 'delete';
      delete mine.record;
      if (ch.old) mine.old = ch.old;
    }
  }
  return { commit, changes, truncated: truncated ?? [] };
}

/** A deleted row's JSON (SQLite's json_object); undefined when it does not parse. */
function parseOld(text: string): Record<string, unknown> | undefined {
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}
