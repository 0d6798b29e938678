/**
 * Opening the server-SQL backend (src/store/pg/open.ts) against a real PostgreSQL
 * (test/helpers/postgres.ts): two instances opened on one database, as two `svc serve`
 * processes would, share the token secret and the field-encryption key (`_secrets`, made by the
 * first), and exactly one of them claims each tick of a scheduled job (`_jobRuns`), however many
 * ask at once. test/e2e/cluster.test.ts runs two real servers behind nginx.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startPostgres, postgresSkipReason, type Postgres } from '../../helpers/postgres.js';
import { openPostgres, type OpenedPostgres } from '../../../src/store/pg/open.js';
import { createLogger } from '../../../src/log/logger.js';
import { CollectionRegistry } from '../../../src/collections/collection-registry.js';
import { RateLimiter } from '../../../src/auth/rate-limit.js';
import { SEARCH_FOLDS_SQL, SEARCH_NO_UNACCENT_WARNING } from '../../../src/store/pg/bootstrap.js';
import pg from 'pg';

const skip = postgresSkipReason() ?? false;
let server: Postgres | null = null;
const opened: OpenedPostgres[] = [];
const lines: string[] = [];
const logger = createLogger({ format: 'json', level: 'info', requests: false, write: (l) => lines.push(l) });

before(async () => {
  if (!skip) server = await startPostgres();
});

after(async () => {
  for (const o of opened) await o.close().catch(() => undefined);
  if (server) await server.stop();
});

async function two(name: string): Promise<[OpenedPostgres, OpenedPostgres]> {
  const url = await server!.createDatabase(name);
  // started together, as a deployment's instances are: the bootstrap and the secrets must not race
  const [a, b] = await Promise.all([openPostgres(url, logger, undefined, new CollectionRegistry(), new RateLimiter()), openPostgres(url, logger, undefined, new CollectionRegistry(), new RateLimiter())]);
  opened.push(a, b);
  return [a, b];
}

test('instances opened on one database share the token secret and the encryption key', { skip }, async () => {
  const [a, b] = await two('secrets');
  assert.equal(a.secret.length, 32);
  assert.deepEqual(a.secret, b.secret);
  assert.ok(a.encryptionKey && b.encryptionKey);
  assert.deepEqual(a.encryptionKey, b.encryptionKey);
  assert.notDeepEqual(a.secret, a.encryptionKey, 'two secrets, not one');
  // a third instance, later, reads the same
  const c = await openPostgres(server!.urlOf('secrets'), logger, undefined, new CollectionRegistry(), new RateLimiter());
  opened.push(c);
  assert.deepEqual(c.secret, a.secret);
  // SERVICE_ENCRYPTION_KEY given: none is read from the database
  const d = await openPostgres(server!.urlOf('secrets'), logger, Buffer.alloc(32, 7), new CollectionRegistry(), new RateLimiter());
  opened.push(d);
  assert.equal(d.encryptionKey, null);
  assert.match(lines.join('\n'), /pgvector|vector/, 'the missing pgvector extension is a warning, not an error');
});

test('exactly one instance claims each tick of a scheduled job', { skip }, async () => {
  const [a, b] = await two('ticks');
  const tick = new Date(Math.floor(Date.now() / 1000) * 1000);
  for (let round = 0; round < 5; round++) {
    const at = new Date(tick.getTime() + round * 1000);
    const answers = await Promise.all([a.claimTick('digest', at), b.claimTick('digest', at), a.claimTick('digest', at), b.claimTick('digest', at)]);
    assert.equal(answers.filter(Boolean).length, 1, `round ${round}: ${answers}`);
  }
  // another job's tick at the same second is its own
  assert.equal(await b.claimTick('cleanup', tick), true);
  assert.equal(await a.claimTick('cleanup', tick), false);
});

test('full-text search folds accents through unaccent; a role that may not create the extension gets a plain configuration and a warning', { skip }, async () => {
  const url = await server!.createDatabase('fold');
  const before = lines.length;
  const o = await openPostgres(url, logger, undefined, new CollectionRegistry(), new RateLimiter());
  opened.push(o);
  assert.equal(Number((await o.store.reader.get(SEARCH_FOLDS_SQL, []))?.[0]), 1);
  assert.deepEqual(await o.store.reader.get(`SELECT to_tsvector('svc_search', 'Crème Brûlée ÉTÉ São-Paulo')::text`, []), ["'brulee':2 'creme':1 'ete':3 'paulo':6 'sao':5 'sao-paulo':4"]);
  const warned = (from: number) => lines.slice(from).some((l) => JSON.parse(l).msg === SEARCH_NO_UNACCENT_WARNING);
  assert.ok(!warned(before));

  // a role that may create tables in the schema but not extensions in the database
  await server!.createDatabase('nofold');
  const admin = new pg.Client({ connectionString: server!.urlOf('nofold') });
  await admin.connect();
  try {
    await admin.query('CREATE ROLE limited LOGIN; GRANT USAGE, CREATE ON SCHEMA public TO limited');
  } finally {
    await admin.end();
  }
  const mark = lines.length;
  const p = await openPostgres(`postgres://limited@127.0.0.1:${server!.port}/nofold`, logger, undefined, new CollectionRegistry(), new RateLimiter());
  opened.push(p);
  assert.equal(Number((await p.store.reader.get(SEARCH_FOLDS_SQL, []))?.[0]), 0);
  assert.deepEqual(await p.store.reader.get(`SELECT to_tsvector('svc_search', 'Crème')::text`, []), ["'crème':1"]);
  assert.ok(warned(mark), lines.slice(mark).join('\n'));
});
