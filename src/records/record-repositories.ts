/**
 * The narrow repositories of the record services: what RecordLister and its parts (./list/),
 * RecordReader (records-read.ts) and RecordWriter (records-write.ts) take instead of the whole
 * `Store` (the service locator of src/context/store.ts; ARCHITECTURE.md, "Folders"), so a class's
 * dependencies show in its constructor type and a test can hand it a small fake.
 *
 * Each keeps the Store's shape (`registry`, `rules`, `caches`, `codec`, `reader`, `writer`, the
 * statement stores under `sql`), narrowed with `Pick` to the members used, so the method bodies
 * read as before and a Store is one too. The composition root builds them over the open
 * database's Store (src/boot/record-repositories.ts): the same registry, rule book, caches,
 * reader, writer and statement stores, each reached in one property read as before.
 */
import type { CollectionRegistry } from '../collections/collection-registry.js';
import type { Collection } from '../model/schema.js';
import type { RuleBook } from '../rules/access.js';
import type { Caches } from '../cache/caches.js';
import type { SqlReader, SqlWriter } from '../store/backend.js';
import type { StoreSql } from '../store/store.js';
import type { RecordSql } from '../store/record-sql.js';
import type { AuthRecordStore, ExternalAuthRowStore } from '../store/auth-store.js';
import type { Dialect } from '../store/dialect.js';
import type { RecordCodec } from './record-codec.js';

/**
 * What the list parts use (RecordLister of records-list.ts; ListPlanner, ListCounts, OffsetPages,
 * CursorPages and PageRenderer of ./list/): the schema lookups the filter and sort compilers take
 * and the collections' versions and schema generation (cache keys), the list rule, the page,
 * count, walk and list-row caches with the write generations that key them, the record codecs,
 * the reads a page runs where its plan says (main thread, reader pool, SQLite's synchronous
 * reads), the writer's commit count (what a rendered page stays valid for), and the list and
 * keyset statements of the backend (`sql.kind`: its rule dialect).
 */
export interface ListRepository {
  registry: Pick<CollectionRegistry, 'byId' | 'byName' | 'version' | 'schemaGeneration'>;
  rules: Pick<RuleBook, 'check'>;
  caches: Pick<Caches, 'pages' | 'counts' | 'walks' | 'listRows' | 'generation'>;
  /** the record codec of `c`'s current version (Store.codec) */
  codec(c: Collection): RecordCodec;
  reader: Pick<SqlReader, 'get' | 'all' | 'plan' | 'sync' | 'getBalanced' | 'getAuto' | 'allAuto' | 'workerFree'>;
  writer: Pick<SqlWriter, 'commits'>;
  sql: Pick<StoreSql, 'kind' | 'list' | 'keyset'>;
}

/**
 * What an auth record's provider links are read from (withLinks of records-read.ts): the
 * `_externalAuths` list of records.
 */
export interface LinkSource {
  sql: { externalAuths: Pick<ExternalAuthRowStore, 'list'> };
}

/**
 * What the stateful cursor tokens' table (`_cursorStates`) is read and written through
 * (listConfigFrom of records-read.ts): a point read and the writer.
 */
export interface CursorStateSource {
  reader: Pick<SqlReader, 'get'>;
  writer: Pick<SqlWriter, 'write'>;
}

/**
 * What RecordReader uses besides its lister's repository (a ListRepository, which it hands on):
 * the record statements of a view, the abilities and expand (one row by id, under a rule; rows
 * matching a WHERE clause; a rule as a 0/1 column), and the provider links of auth records
 * (LinkSource).
 */
export interface RecordReadRepository extends ListRepository, LinkSource {
  sql: ListRepository['sql'] & LinkSource['sql'] & { records: Pick<RecordSql, 'view' | 'holds' | 'selectOne' | 'selectAll'> };
}

/**
 * What RecordWriter uses: the collections (a relation's target by id, the other auth
 * collections an id must be free in, versions for its statement cache), the create, update and
 * delete rules, the record codecs, point reads (a record before its delete, a password hash, a
 * rule that reads no record, a file field's current value), the writer (where a write's steps go
 * when no batch takes them), the record statements of the writes and their guards, the side rows
 * of an auth record dropped with it, and the constraint failures of the backend (409).
 */
export interface RecordWriteRepository {
  registry: Pick<CollectionRegistry, 'all' | 'byId' | 'version'>;
  rules: Pick<RuleBook, 'check'>;
  /** the record codec of `c`'s current version (Store.codec) */
  codec(c: Collection): RecordCodec;
  reader: Pick<SqlReader, 'get'>;
  writer: Pick<SqlWriter, 'write'>;
  sql: {
    records: Pick<RecordSql, 'rowById' | 'insert' | 'createRuleGuard' | 'idFreeIn' | 'requestRuleHolds' | 'setTerm' | 'update' | 'delete' | 'passwordAndRule' | 'relationTargetsExist'>;
    auth: Pick<AuthRecordStore, 'recordSideRowsDeleteSteps'>;
    dialect: Pick<Dialect, 'constraintError'>;
  };
}
