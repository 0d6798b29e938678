// The floor of a cold get-by-id over the cities (bench/lib/cities.ts) on svc's design:
// uWebSockets.js on the main thread, per request one point read through a prepared libsql
// statement (the columns svc selects, rows as arrays, integers as BigInt, as
// src/store/sqlite/reader.ts runs it) and the record's JSON from a fast-json-stringify
// serializer of the same schema svc's codec builds (src/records/record-codec.ts), sent with the
// same content type. Reads of one event-loop turn share one read transaction, as svc's reader
// does (its read snapshots: a point read costs about half inside an open transaction). No routing, rules, caches, read snapshots or logging: whatever svc does on
// top costs more. bench/random-reads.ts checks the bodies equal svc's byte for byte.
//
//   node bench/read-floor.mjs PORT DATABASE
//
// GET /api/collections/cities/records/:id answers the record or 404. Prints "listening on
// 127.0.0.1:PORT" once ready.
import uWS from '@trufflesuite/uws-js-unofficial';
import Database from 'libsql';
import fastJson from 'fast-json-stringify';
import { listenUntilSignal } from './lib/uws-listen.mjs';

if (typeof uWS.getParts !== 'function') {
  console.error('read-floor: the native uWebSockets.js addon did not load (JS fallback in use); refusing to start');
  process.exit(1);
}
const [port, database] = [Number(process.argv[2]), process.argv[3]];
if (!Number.isInteger(port) || !database) {
  console.error('usage: node bench/read-floor.mjs PORT DATABASE');
  process.exit(2);
}
const db = new Database(database, { readonly: true });
const [cid, cname] = db.prepare(`SELECT id, name FROM _collections WHERE name = 'cities'`).raw(true).get();
const row = db.prepare('SELECT r."id", r."created", r."updated", r."name", r."country", r."population", r."lat", r."lng" FROM "cities" r WHERE r."id" = ? LIMIT 1');
row.raw(true);
row.safeIntegers(true);
const num = (v) => (typeof v === 'bigint' ? Number(v) : v ?? 0);
const stringify = fastJson({
  type: 'object',
  properties: {
    collectionId: { type: 'string' }, collectionName: { type: 'string' }, id: { type: 'string' }, created: { type: 'string' }, updated: { type: 'string' },
    name: { type: 'string' }, country: { type: 'string' }, population: { type: 'number' }, lat: { type: 'number' }, lng: { type: 'number' },
    expand: { type: 'object', additionalProperties: true },
  },
});
const notFound = '{"status":404,"code":"not_found","message":"The requested resource was not found.","data":{}}';

let inSnapshot = false;
const endSnapshot = () => {
  inSnapshot = false;
  db.exec('COMMIT');
};

const app = uWS.App()
  .get('/api/collections/cities/records/:id', (res, req) => {
    if (!inSnapshot) {
      db.exec('BEGIN');
      inSnapshot = true;
      setImmediate(endSnapshot);
    }
    const r = row.get([req.getParameter(0)]);
    if (!r) {
      res.cork(() => res.writeStatus('404 Not Found').writeHeader('content-type', 'application/json').end(notFound));
      return;
    }
    const body = stringify({ collectionId: cid, collectionName: cname, id: r[0], created: r[1], updated: r[2], name: r[3] ?? '', country: r[4] ?? '', population: num(r[5]), lat: num(r[6]), lng: num(r[7]) });
    res.cork(() => res.writeHeader('content-type', 'application/json').end(body));
  });
listenUntilSignal(app, port, 'read-floor');
