/**
 * The repositories the record reader and writer take instead of the whole `Store`
 * (src/records/record-repositories.ts; ARCHITECTURE.md, "Folders": `src/boot/`), built over the
 * Store of the open database. They hold the Store's own registry, rule book, caches, reader,
 * writer and statement stores (the writer's commit count is read live from it), so a read reaches
 * each in as many property reads as through the Store; `sql` holds only the statement stores used.
 */
import type { Store } from '../context/store.js';
import type { RecordReadRepository, RecordWriteRepository } from '../records/record-repositories.js';

/** RecordReader's repository (and its lister's): `store` with the list, keyset, record and provider-link statements. */
export function recordReadRepository(store: Store): RecordReadRepository {
  const { kind, list, keyset, records, externalAuths } = store.sql;
  return { registry: store.registry, rules: store.rules, caches: store.caches, codec: (c) => store.codec(c), reader: store.reader, writer: store.writer, sql: { kind, list, keyset, records, externalAuths } };
}

/** RecordWriter's repository: `store` with the record statements, the auth records' side rows and the dialect. */
export function recordWriteRepository(store: Store): RecordWriteRepository {
  const { records, auth, dialect } = store.sql;
  return { registry: store.registry, rules: store.rules, codec: (c) => store.codec(c), reader: store.reader, writer: store.writer, sql: { records, auth, dialect } };
}
