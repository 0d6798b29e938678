/**
 * Names of prepared statements on PostgreSQL (docs/deployment.md: svc prepares its statements
 * once per connection), shared by the writer (src/store/pg/writer.ts, one connection) and the
 * reader (src/store/pg/reader.ts, every pool connection): the first `max` statement texts get a
 * name, `<prefix><n>`, and keep it; later texts run unnamed. A name is never given to another
 * text (the pg driver refuses a name prepared with a different text on a connection), so a
 * forgotten text gets a new name.
 */
import { checkRendered } from '../slots.js';

export class StatementNames {
  private names = new Map<string, string>();
  private given = 0;

  /** `prefix`: of every name (`svc_w`, `svc_r`); `max`: names given at most until reset(). */
  constructor(private readonly prefix: string, readonly max: number) {}

  /**
   * The name of `text`, given on first use; undefined once `max` names were given.
   * @throws Error when `text` holds a slot its builder did not render (checkRendered)
   */
  of(text: string): string | undefined {
    let name = this.names.get(text);
    if (name === undefined) {
      checkRendered(text);
      if (this.given < this.max) {
        name = `${this.prefix}${++this.given}`;
        this.names.set(text, name);
      }
    }
    return name;
  }

  /** Forgets the name of `text` (its next use prepares it again); whether it had one. */
  forget(text: string): boolean {
    return this.names.delete(text);
  }

  /** Forgets every name (after DDL); the names given are not given again. */
  forgetAll(): void {
    this.names.clear();
  }

  /** Names given since the start or the last reset(). */
  get made(): number {
    return this.given;
  }

  /** Starts over, for a new connection that has prepared nothing. */
  reset(): void {
    this.names.clear();
    this.given = 0;
  }
}

/**
 * Whether a failure is PostgreSQL's refusal to run a prepared statement whose result columns
 * changed under it (a schema change made in another session): SQLSTATE 0A000 with that message.
 */
export function isResultTypeChanged(sqlState: string | undefined, message: string): boolean {
  return sqlState === '0A000' && message.includes('cached plan must not change result type');
}
