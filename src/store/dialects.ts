/**
 * Each backend's SQL spelling by the backend's name, for the feature code that is handed the name
 * of its Store's backend (StoreSql.kind, chosen once when src/store/open.ts opens the database)
 * rather than the Store itself: the list dialect of a search plan (records/search.ts) and the SQL
 * of a vector query (records/vector.ts). Features import this module (and the rule compiler
 * src/store/rule-emitters.ts, apart: the list builders import the compiler), never
 * src/store/sqlite/ or src/store/pg/ (ARCHITECTURE.md, "Folders").
 */
import type { BackendKind } from './backend.js';
import type { ListDialect } from './sql/list-dialect.js';
import { sqliteListDialect } from './sqlite/list-dialect.js';
import { pgListDialect } from './pg/list-dialect.js';
import { isVectorField, malformedProbeSql, vectorDistanceSql, vectorIndexName } from './sqlite/vector-sql.js';

/** The SQL of a vector query (records/vector.ts, parseVector; docs/lists.md, "Vectors"). */
export interface VectorQuerySql {
  /** whether `f` has a shadow column of its embeddings (a json field with `dimensions`) */
  isVectorField: typeof isVectorField;
  /** the distance of a row's embedding to the query (one parameter, a SLOT: the query), NULL without one */
  distanceSql: typeof vectorDistanceSql;
  /** the name of a vector field's nearest-neighbour index */
  indexName: typeof vectorIndexName;
  /** a SELECT answering a row when a stored embedding of the field is malformed */
  malformedProbeSql: typeof malformedProbeSql;
}

/** What a feature reads of one backend's spelling. */
export interface BackendSql {
  /** the backend's entry of the list dialect (src/store/sql/list-dialect.ts) */
  list: ListDialect;
  vectors: VectorQuerySql;
}

let byKind: Record<BackendKind, BackendSql> | undefined;

/** The spelling of the backend named `kind` (built on the first call). */
export function backendSql(kind: BackendKind): BackendSql {
  if (byKind) return byKind[kind];
  // libsql's vector functions (src/store/sqlite/vector-sql.ts)
  const libsqlVectors: VectorQuerySql = { isVectorField, distanceSql: vectorDistanceSql, indexName: vectorIndexName, malformedProbeSql };
  byKind = {
    sqlite: { list: sqliteListDialect, vectors: libsqlVectors },
    // Not ported: a vector query's distance and probe are written in libsql's spelling only, and a
    // PostgreSQL store is handed that spelling as it was before this table (pgvector answers only
    // the index path's nearest rows in its own: pgListDialect.nearestByIndexSql).
    postgres: { list: pgListDialect, vectors: libsqlVectors },
  };
  return byKind[kind];
}
