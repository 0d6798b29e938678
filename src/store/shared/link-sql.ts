/**
 * Statements of the two sign-in link tables on both backends (implement ExternalAuthRowStore and
 * PasskeyRowStore, src/store/auth-store.ts), over the backend-neutral SqlReader
 * (src/store/backend.ts): `_externalAuths` (OAuth2 provider links, docs/auth.md, "OAuth2 and
 * passkeys") and `_passkeys` (WebAuthn credentials, the same section; second factors have
 * factor = 1, src/store/shared/mfa-sql.ts). The tables themselves are created by each backend's
 * bootstrap: LINK_DDL of src/store/sqlite/link-sql.ts, SYSTEM_DDL of src/store/pg/bootstrap.ts.
 *
 * A provider account linked twice (UNIQUE ("collectionId","provider","providerId")) or a
 * credential id registered twice (the primary key) fails the job with a constraint failure on
 * both backends: SQLITE_CONSTRAINT on SQLite, SQLSTATE 23505 on PostgreSQL (src/store/pg/dialect.ts
 * reports it as one). `counter` (SQLite INTEGER, PostgreSQL bigint) and `factor` (INTEGER /
 * smallint 0/1: BigInt on SQLite, a BigInt and a number on PostgreSQL) are answered as a number
 * and a boolean on both.
 * A link's `confirmed` (INTEGER / smallint 0/1) says whether it was made under a proven email
 * address; links of a database older than the column count as unconfirmed (its DEFAULT 0).
 * What the backends spell differently is in {@link LinkSqlDialect}.
 */
import type { WriteStep } from '../write-job.js';
import type { ExternalAuthRowStore, PasskeyRow, PasskeyRowStore, PasskeyView, StepFail } from '../auth-store.js';
import type { BackendKind, SqlReader } from '../backend.js';
import { slotList } from '../slots.js';

/** What the link statements spell differently per backend. */
export interface LinkSqlDialect {
  /**
   * The ORDER BY of a page's OAuth2 links. Ties of `created` and `provider` are ordered by the
   * record on PostgreSQL; SQLite leaves them to its index order.
   */
  readonly externalAuthOrder: string;
  /**
   * The ORDER BY of a record's passkeys. Ties of `created` are ordered by the credential's id on
   * PostgreSQL; SQLite leaves them to its index order.
   */
  readonly passkeyOrder: string;
}

/** Each backend's spelling. */
export const LINK_DIALECTS: Readonly<Record<BackendKind, LinkSqlDialect>> = {
  sqlite: { externalAuthOrder: '"created", "provider"', passkeyOrder: '"created"' },
  postgres: { externalAuthOrder: '"created", "provider", "recordId"', passkeyOrder: '"created", "id"' },
};

/** Record ids per IN list (bounded IN lists: a page holds at most 500 records). */
const IN_CHUNK = 500;

/**
 * The OAuth2 link store over one backend's reader; `dialect`: that backend's entry of
 * {@link LINK_DIALECTS}.
 */
export class ExternalAuthSql implements ExternalAuthRowStore {
  constructor(private reader: SqlReader, private dialect: LinkSqlDialect) {}

  async recordFor(collectionId: string, provider: string, providerId: string): Promise<string | undefined> {
    const row = await this.reader.get('SELECT "recordId" FROM "_externalAuths" WHERE "collectionId" = $1 AND "provider" = $2 AND "providerId" = $3', [collectionId, provider, providerId]);
    return row ? String(row[0]) : undefined;
  }

  async list(collectionId: string, recordIds: readonly string[]): Promise<{ recordId: string; provider: string; providerId: string }[]> {
    if (!recordIds.length) return [];
    const out: { recordId: string; provider: string; providerId: string }[] = [];
    for (let i = 0; i < recordIds.length; i += IN_CHUNK) {
      const ids = recordIds.slice(i, i + IN_CHUNK);
      const rows = await this.reader.all(
        `SELECT "recordId","provider","providerId" FROM "_externalAuths" WHERE "collectionId" = $1 AND "recordId" IN (${slotList(2, ids.length)}) ORDER BY ${this.dialect.externalAuthOrder}`,
        [collectionId, ...ids],
      );
      for (const r of rows) out.push({ recordId: String(r[0]), provider: String(r[1]), providerId: String(r[2]) });
    }
    return out;
  }

  linkStep(id: string, collectionId: string, recordId: string, provider: string, providerId: string, created: string, confirmed: boolean): WriteStep {
    return {
      sql: 'INSERT INTO "_externalAuths" ("id","collectionId","recordId","provider","providerId","created","confirmed") VALUES ($1,$2,$3,$4,$5,$6,$7)',
      params: [id, collectionId, recordId, provider, providerId, created, confirmed ? 1 : 0],
    };
  }

  unconfirmedDropStep(collectionId: string, recordId: string): WriteStep {
    return { sql: 'DELETE FROM "_externalAuths" WHERE "collectionId" = $1 AND "recordId" = $2 AND "confirmed" = 0', params: [collectionId, recordId] };
  }

  unlinkStep(collectionId: string, recordId: string, provider: string, fail: StepFail): WriteStep {
    return { sql: 'DELETE FROM "_externalAuths" WHERE "collectionId" = $1 AND "recordId" = $2 AND "provider" = $3', params: [collectionId, recordId, provider], expect: 'change', fail };
  }
}

const COLS = '"id","recordId","publicKey","counter","transports","factor"';
const passkey = (r: unknown[]): PasskeyRow => ({ id: String(r[0]), recordId: String(r[1]), publicKey: String(r[2]), counter: Number(r[3]), transports: String(r[4]), factor: Number(r[5]) === 1 });

/**
 * The passkey store over one backend's reader; `dialect`: that backend's entry of
 * {@link LINK_DIALECTS}.
 */
export class PasskeySql implements PasskeyRowStore {
  constructor(private reader: SqlReader, private dialect: LinkSqlDialect) {}

  async find(collectionId: string, credentialId: string): Promise<PasskeyRow | undefined> {
    const r = await this.reader.get(`SELECT ${COLS} FROM "_passkeys" WHERE "id" = $1 AND "collectionId" = $2`, [credentialId, collectionId]);
    return r ? passkey(r) : undefined;
  }

  async list(collectionId: string, recordId: string, factor?: boolean): Promise<PasskeyRow[]> {
    const only = factor === undefined ? '' : ` AND "factor" = ${factor ? 1 : 0}`;
    return (await this.reader.all(`SELECT ${COLS} FROM "_passkeys" WHERE "collectionId" = $1 AND "recordId" = $2${only} ORDER BY ${this.dialect.passkeyOrder}`, [collectionId, recordId])).map(passkey);
  }

  async signInKeys(collectionId: string, recordId: string): Promise<PasskeyView[]> {
    return (await this.reader.all(`SELECT "id","created","lastUsed" FROM "_passkeys" WHERE "collectionId" = $1 AND "recordId" = $2 AND "factor" = 0 ORDER BY ${this.dialect.passkeyOrder}`, [collectionId, recordId]))
      .map((r) => ({ id: String(r[0]), created: String(r[1]), lastUsed: r[2] === null || r[2] === undefined ? '' : String(r[2]) }));
  }

  removeSignInStep(collectionId: string, recordId: string, id: string, fail: StepFail): WriteStep {
    return { sql: 'DELETE FROM "_passkeys" WHERE "collectionId" = $1 AND "recordId" = $2 AND "id" = $3 AND "factor" = 0', params: [collectionId, recordId, id], expect: 'change', fail };
  }

  removeStep(collectionId: string, recordId: string, id: string | null, fail: StepFail): WriteStep {
    if (id === null) return { sql: 'DELETE FROM "_passkeys" WHERE "collectionId" = $1 AND "recordId" = $2 AND "factor" = 1', params: [collectionId, recordId] };
    return { sql: 'DELETE FROM "_passkeys" WHERE "collectionId" = $1 AND "recordId" = $2 AND "id" = $3', params: [collectionId, recordId, id], expect: 'change', fail };
  }

  removeAllSignInStep(collectionId: string, recordId: string): WriteStep {
    return { sql: 'DELETE FROM "_passkeys" WHERE "collectionId" = $1 AND "recordId" = $2 AND "factor" = 0', params: [collectionId, recordId] };
  }

  addStep(collectionId: string, row: PasskeyRow, created: string): WriteStep {
    return {
      sql: 'INSERT INTO "_passkeys" ("id","collectionId","recordId","publicKey","counter","transports","factor","created") VALUES ($1,$2,$3,$4,$5,$6,$7,$8)',
      params: [row.id, collectionId, row.recordId, row.publicKey, row.counter, row.transports, row.factor ? 1 : 0, created],
    };
  }

  useStep(collectionId: string, credentialId: string, oldCounter: number, newCounter: number, now: string, fail: StepFail): WriteStep {
    return {
      sql: 'UPDATE "_passkeys" SET "counter" = $1, "lastUsed" = $2 WHERE "id" = $3 AND "collectionId" = $4 AND "counter" = $5',
      params: [newCounter, now, credentialId, collectionId, oldCounter], expect: 'change', fail,
    };
  }
}
