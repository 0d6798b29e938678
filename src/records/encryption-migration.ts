/**
 * Existing values when a field's `encrypted` option changes (docs/api.md, "Collections"): after the
 * collection update commits, the values already stored are re-written in the new form (encrypted,
 * or back to plaintext) in batches of write jobs. Until a row is migrated it stays readable (the
 * codec passes plaintext through), and each row's update is guarded by its old value, so a record
 * written meanwhile (already in the new form) is left alone. A value that cannot be decrypted is
 * left as it is rather than lost.
 */
import type { Collection, Field } from '../model/schema.js';
import type { SqlReader, SqlWriter } from '../store/backend.js';
import type { RecordSql } from '../store/record-sql.js';
import type { WriteStep } from '../store/write-job.js';
import { bindValue } from '../store/bind.js';
import { decryptStored, encryptStored, isEncrypted } from './encryption.js';

const BATCH = 200;

/** Fields of `next` whose `encrypted` flag differs from the same field (by id) in `prev`. */
export function encryptionToggled(prev: Collection, next: Collection): Field[] {
  return next.fields.filter((f) => {
    const p = prev.fields.find((x) => x.id === f.id);
    return p !== undefined && !!p.options.encrypted !== !!f.options.encrypted;
  });
}

/**
 * What migrateEncryption reads and writes through: the values a column holds (read on the reader
 * pool), the guarded rewrite of one value, and the writer. A Store is one.
 */
export interface EncryptionMigrationRepository {
  reader: Pick<SqlReader, 'all'>;
  writer: Pick<SqlWriter, 'write'>;
  sql: { records: Pick<RecordSql, 'nonNullColumn' | 'replaceValue'> };
}

/** Re-writes the stored values of toggled fields; returns the number of rows changed. */
export async function migrateEncryption(store: EncryptionMigrationRepository, prev: Collection, next: Collection): Promise<number> {
  let changed = 0;
  for (const f of encryptionToggled(prev, next)) {
    const rows = await store.reader.all(store.sql.records.nonNullColumn(next, f.name), [], { pool: true });
    let steps: WriteStep[] = [];
    const flush = async () => {
      if (!steps.length) return;
      const results = await store.writer.write(steps);
      for (const r of results) changed += r.changes;
      steps = [];
    };
    for (const [rawId, old] of rows) {
      const id = String(rawId);
      let value: unknown;
      if (f.options.encrypted) {
        if (isEncrypted(old)) continue;
        value = encryptStored(next.id, f.id, id, String(old));
      } else {
        if (!isEncrypted(old)) continue;
        value = decryptStored(next.id, f.id, id, old);
        if (value === null) continue; // undecryptable: keep the ciphertext
      }
      steps.push({ sql: store.sql.records.replaceValue(next, f.name), params: [value, id, old].map(bindValue) });
      if (steps.length >= BATCH) await flush();
    }
    await flush();
  }
  return changed;
}
