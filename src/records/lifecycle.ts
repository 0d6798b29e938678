/**
 * Record lifecycle events (docs/framework.md, "Hooks"): `beforeCreate`, `afterCreate`,
 * `beforeUpdate`, `afterUpdate`, `beforeDelete`, `afterDelete`, fired by the RecordWriter on
 * every path that writes a record (REST, batches, `svc import`, an OAuth2 sign-up, a resumable
 * upload's completion, application code), so no caller chooses whether they run.
 *
 * The writer only fires; what a handler does with an error is the handler's: an app's before
 * handler throws an ApiError to refuse the write (nothing is written), an after handler's
 * failure is its own to log (the write stands). Handlers are registered per collection name
 * (case-insensitive) before the server serves.
 */
import type { Collection } from '../model/schema.js';
import type { Principal } from '../rules/access.js';

/** The six record events. */
export type RecordEventName = 'beforeCreate' | 'afterCreate' | 'beforeUpdate' | 'afterUpdate' | 'beforeDelete' | 'afterDelete';

/** The request a write serves, for handlers that log (its `X-Request-Id`); absent for writes of no request. */
export type RequestRef = { readonly headers: { readonly requestId?: string } };

/**
 * One event: the collection, the caller (null: anonymous or application code) and the record:
 * for before create/update the data about to be written (a handler may change it in place),
 * for after create/update the stored record, for delete the record as it was.
 */
export interface RecordEvent {
  collection: Collection;
  principal: Principal | null;
  record: Record<string, unknown>;
  request?: RequestRef;
}

/** A handler of one event; a before handler's rejection refuses the write. */
export type RecordEventHandler = (event: RecordEvent) => Promise<void>;

/** The handlers of one collection, by event. */
export type RecordEventHandlers = Partial<Record<RecordEventName, RecordEventHandler>>;

/** Where the handlers are registered and the writer finds them. */
export class RecordLifecycle {
  private byCollection = new Map<string, RecordEventHandlers>();

  /** Registers `handlers` for the collection named `collection` (case-insensitive), replacing earlier ones. */
  register(collection: string, handlers: RecordEventHandlers): void {
    this.byCollection.set(collection.toLowerCase(), handlers);
  }

  /** The handlers of `c`, or undefined when it has none (the write then takes its plain path). */
  of(c: Collection): RecordEventHandlers | undefined {
    return this.byCollection.size ? this.byCollection.get(c.name.toLowerCase()) : undefined;
  }
}
