/**
 * How PostgreSQL's answers are read (ARCHITECTURE.md, `src/store/pg/`): the type parsers every
 * PostgreSQL read connection uses, PgReader's pool (src/store/pg/reader.ts) and the app
 * migrations' connection (src/store/pg/migrations-sql.ts), and what tells a lost connection from
 * a failed statement.
 */
import pg from 'pg';

const BOOL_OID = 16;
const BYTEA_OID = 17;
const INT8_OID = 20;
const INT2_OID = 21;
const INT4_OID = 23;
const OID_OID = 26;
const FLOAT4_OID = 700;
const FLOAT8_OID = 701;
const NUMERIC_OID = 1700;

const asText = (v: string): string => v;
const asBigInt = (v: string): bigint => BigInt(v);
const asNumber = (v: string): number => Number(v);
const asBoolean = (v: string): boolean => v === 't';
const byteaParser = pg.types.getTypeParser(BYTEA_OID, 'text') as (v: string) => Buffer;

/**
 * Type parsers for PostgreSQL read connections: each value in the JavaScript type that holds
 * PostgreSQL's exactly, not in SQLite's shapes (docs/deployment.md, "Values read back").
 * - int2, int4 and oid as numbers; int8 as BigInt (64 bits: a number would round past 2^53);
 * - booleans as booleans (a comparison or EXISTS in a select list);
 * - float4, float8 and numeric as numbers (numeric past 2^53 loses precision, as a REAL would);
 * - bytea as Buffer;
 * - everything else (text, json and jsonb, dates and times, arrays, uuid …) as the server's
 *   text, which the record codec decodes as it decodes SQLite's.
 * Given per client (`types`), never set globally.
 */
export function readTypes(): pg.CustomTypesConfig {
  const getTypeParser = (oid: number, format?: 'text' | 'binary'): ((v: string) => unknown) => {
    if (format === 'binary') return pg.types.getTypeParser(oid, 'binary') as (v: string) => unknown;
    switch (oid) {
      case INT8_OID:
        return asBigInt;
      case INT2_OID:
      case INT4_OID:
      case OID_OID:
      case FLOAT4_OID:
      case FLOAT8_OID:
      case NUMERIC_OID:
        return asNumber;
      case BOOL_OID:
        return asBoolean;
      case BYTEA_OID:
        return byteaParser;
      default:
        return asText;
    }
  };
  return { getTypeParser: getTypeParser as pg.CustomTypesConfig['getTypeParser'] };
}

/** A failure of the connection rather than of a statement: the session is gone or unusable. */
export function isConnectionFailure(err: unknown): boolean {
  if (!(err instanceof pg.DatabaseError)) return true;
  if (err.severity === 'FATAL' || err.severity === 'PANIC') return true;
  const code = err.code ?? '';
  return code.startsWith('08') || code.startsWith('57P');
}
