/**
 * The reference stack a Node user would pick instead of svc: Fastify over the same libsql
 * database file, serving the read scenarios the plain way — prepared statements on the main
 * thread, rows mapped to objects, `JSON.stringify` (Fastify's default serializer without a
 * response schema), no rules, no caches.
 *
 *   node --import tsx bench/fastify-ref.ts DB_PATH PORT
 *
 * Routes (`:table` is one of the seeded posts tables):
 * - `GET /:table/:id` → the post, 404 `{"message":"not found"}` when absent;
 * - `GET /:table?page=N&perPage=20[&skipTotal=1]` → `{page, perPage, totalItems, totalPages,
 *   items}`: `SELECT … LIMIT ? OFFSET ?` plus `SELECT COUNT(*)` (skipped with skipTotal=1; the
 *   totals are then -1, as svc answers).
 *
 * svc stores a posts table as columns id, created, updated, then one per field: the multi-select
 * `tags` as JSON text, the relation `author` as an id, the bool `public` as 0/1; they are mapped
 * back to the shapes svc returns so both answer bodies of the same size. The file is opened
 * read-only; svc keeps writing it (WAL) while this process reads. Prints "listening on PORT".
 */
import Fastify from 'fastify';
import Database from 'libsql';

const [dbPath, portArg] = process.argv.slice(2);
const port = Number(portArg);
if (!dbPath || !Number.isInteger(port) || port <= 0) {
  console.error('usage: node --import tsx bench/fastify-ref.ts DB_PATH PORT');
  process.exit(2);
}

const db = new Database(dbPath, { readonly: true });
db.exec('PRAGMA busy_timeout = 5000');

const TABLES = new Set(['posts', 'posts100k']);
const COLUMNS = 'id, created, updated, title, description, public, tags, author';

interface PostRow {
  id: string;
  created: string;
  updated: string;
  title: string;
  description: string;
  public: number;
  tags: string;
  author: string;
}

type Stmt = ReturnType<InstanceType<typeof Database>['prepare']>;
const statements = new Map<string, { byId: Stmt; page: Stmt; count: Stmt }>();

function statementsFor(table: string): { byId: Stmt; page: Stmt; count: Stmt } {
  let s = statements.get(table);
  if (!s) {
    s = {
      byId: db.prepare(`SELECT ${COLUMNS} FROM "${table}" WHERE id = ?`),
      page: db.prepare(`SELECT ${COLUMNS} FROM "${table}" LIMIT ? OFFSET ?`),
      count: db.prepare(`SELECT COUNT(*) AS n FROM "${table}"`),
    };
    statements.set(table, s);
  }
  return s;
}

function toPost(row: PostRow, table: string): Record<string, unknown> {
  return {
    collectionName: table,
    id: row.id,
    created: row.created,
    updated: row.updated,
    title: row.title,
    description: row.description,
    public: row.public === 1,
    tags: JSON.parse(row.tags) as string[],
    author: row.author,
  };
}

const app = Fastify({ logger: false });

app.get<{ Params: { table: string; id: string } }>('/:table/:id', async (req, reply) => {
  const { table, id } = req.params;
  if (!TABLES.has(table)) return reply.code(404).send({ message: 'not found' });
  const row = statementsFor(table).byId.get([id]) as PostRow | undefined;
  if (!row) return reply.code(404).send({ message: 'not found' });
  return toPost(row, table);
});

app.get<{ Params: { table: string }; Querystring: { page?: string; perPage?: string; skipTotal?: string } }>(
  '/:table',
  async (req, reply) => {
    const { table } = req.params;
    if (!TABLES.has(table)) return reply.code(404).send({ message: 'not found' });
    const page = Math.max(1, Number(req.query.page) || 1);
    const perPage = Math.min(500, Math.max(1, Number(req.query.perPage) || 30));
    const s = statementsFor(table);
    const items = (s.page.all([perPage, (page - 1) * perPage]) as PostRow[]).map((r) => toPost(r, table));
    const skipTotal = req.query.skipTotal === '1' || req.query.skipTotal === 'true';
    const totalItems = skipTotal ? -1 : Number((s.count.get([]) as { n: number }).n);
    return { page, perPage, totalItems, totalPages: skipTotal ? -1 : Math.ceil(totalItems / perPage), items };
  },
);

await app.listen({ host: '127.0.0.1', port });
console.log(`listening on ${port}`);

const shutdown = (): void => {
  void app.close().finally(() => process.exit(0));
};
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
