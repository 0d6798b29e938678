/**
 * The callbacks a storage service calls at one point of its work (a writer's commit), each added
 * by a collaborator that can exist only after the service (the reader, opened once the writer
 * made the database; the cluster feed, built over the writer; the metrics). Services get their
 * collaborators at construction and nothing is assigned into them afterwards (ARCHITECTURE.md,
 * "Folders", `src/boot/`): a late one subscribes, and `subscribe` returns its removal.
 */
export class Subscribers<A extends unknown[], R = void> {
  private list: ReadonlyArray<(...args: A) => R> = [];

  /** Adds `fn`, called after those subscribed before it; returns the function that removes it. */
  subscribe(fn: (...args: A) => R): () => void {
    this.list = [...this.list, fn];
    return () => {
      this.list = this.list.filter((f) => f !== fn);
    };
  }

  /** Whether any callback is subscribed (a caller skips work only a callback needs). */
  get any(): boolean {
    return this.list.length > 0;
  }

  /** Calls every callback in subscription order; a throw ends the call and reaches the caller. */
  call(...args: A): void {
    for (const f of this.list) f(...args);
  }

  /** Calls every callback in subscription order and returns their results in that order. */
  results(...args: A): R[] {
    return this.list.map((f) => f(...args));
  }
}
