// The floor of a page-cache-bypassed list page on svc's design: uWebSockets.js on the
// main thread, per request the one database read a plain page of cached records needs (its ids,
// the statement svc runs for `?page=1&perPage=20` over a collection without a sort) through
// libsql, and the page's body sent as bytes. No routing, rules, query parsing, logging, cache
// lookups or rendering: whatever svc does on top of this costs more.
//
//   node bench/list-floor.mjs PORT DATABASE BODY_FILE [TABLE]
//
// GET /?… answers BODY_FILE (any query string) after the read; GET /bare?… answers it without the
// read (the cost of sending the page alone). Prints "listening on 127.0.0.1:PORT" once ready.
import uWS from '@trufflesuite/uws-js-unofficial';
import Database from 'libsql';
import { readFileSync } from 'node:fs';
import { listenUntilSignal } from './lib/uws-listen.mjs';

if (typeof uWS.getParts !== 'function') {
  console.error('list-floor: the native uWebSockets.js addon did not load (JS fallback in use); refusing to start');
  process.exit(1);
}
const [port, database, bodyFile, table = 'cities'] = [Number(process.argv[2]), process.argv[3], process.argv[4], process.argv[5]];
if (!Number.isInteger(port) || !database || !bodyFile) {
  console.error('usage: node bench/list-floor.mjs PORT DATABASE BODY_FILE [TABLE]');
  process.exit(2);
}
const body = readFileSync(bodyFile);
const db = new Database(database, { readonly: true });
const ids = db.prepare(`SELECT group_concat("_v", char(31)) FROM (SELECT r."id" AS "_v" FROM "${table.replaceAll('"', '""')}" r LIMIT ? OFFSET ?)`);
ids.raw(true);
ids.safeIntegers(true);
const params = [20, 0];

const app = uWS.App()
  .get('/', (res) => {
    if (!ids.get(params)?.[0]) throw new Error('list-floor: the table has no rows');
    res.cork(() => res.writeHeader('content-type', 'application/json').end(body));
  })
  .get('/bare', (res) => {
    res.cork(() => res.writeHeader('content-type', 'application/json').end(body));
  });
listenUntilSignal(app, port, 'list-floor');
