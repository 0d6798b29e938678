/**
 * The change feed (ARCHITECTURE.md, "The change feed"): once per committed transaction of the
 * writer thread, the records it created, updated and deleted, trigger side effects and relation
 * cascades included (workers/writer.ts notes them with TEMP triggers). One in-process stream on the
 * main thread: every cache invalidates from it, and realtime, hooks and cross-instance fan-out
 * subscribe to it.
 *
 * Delivery is synchronous, in commit order, after the commit is durable and before any write
 * job of that commit is answered: a request that wrote sees its own write in every cache.
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

export type ChangeListener = (batch: ChangeBatch) => void;

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

/** The stream: subscribe, and the writer client emits. A listener that throws does not stop the others. */
export class ChangeFeed {
  private listeners: ChangeListener[] = [];

  /** Adds a listener; returns the function that removes it. */
  subscribe(listener: ChangeListener): () => void {
    this.listeners = [...this.listeners, listener];
    return () => {
      this.listeners = this.listeners.filter((l) => l !== listener);
    };
  }

  /** Delivers one batch to every listener, in subscription order. */
  emit(batch: ChangeBatch): void {
    for (const l of this.listeners) {
      try {
        l(batch);
      } catch (err) {
        queueMicrotask(() => {
          throw err;
        });
      }
    }
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
