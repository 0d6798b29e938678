// Bare node:http hello-world: the floor of the node:http engine, as bench/hello-uws.mjs is uWS's.
//
//   node bench/hello-node.mjs PORT [HOST] [--record]
//
// GET / answers {"hello":"world"} with content-type application/json; anything else is 404.
// With --record every GET answers the shape of svc's get by id in bench/node-engine.ts instead: a
// record-sized JSON string body (490 bytes) under the same headers (Access-Control-Allow-Origin,
// Content-Type, Content-Length), so the gap to svc is what svc does besides writing the reply.
// Keep-alive as node:http has it by default. Prints "listening on HOST:PORT" once ready.
import { createServer } from 'node:http';

const record = process.argv.includes('--record');
const args = process.argv.slice(2).filter((a) => a !== '--record');
const port = Number(args[0]);
const host = args[1] ?? '127.0.0.1';
if (!Number.isInteger(port) || port <= 0 || port > 65535) {
  console.error('usage: node bench/hello-node.mjs PORT [HOST] [--record]');
  process.exit(2);
}

const hello = Buffer.from(JSON.stringify({ hello: 'world' }));
const notFound = Buffer.from('{"status":404}');
const recordBody = JSON.stringify({
  collectionId: 'vsrws059c5hji4c',
  collectionName: 'posts',
  id: 'benchpost000100',
  created: '2026-11-28 04:22:30.532Z',
  updated: '2026-11-28 04:22:30.532Z',
  title: 'Post number 100',
  body: 'A record of moderate size, about the length of a short blog post summary, so the response is not trivially small compared with the hello-world body. '.repeat(2),
});

const server = createServer(
  record
    ? (req, res) => {
        res.writeHead(200, ['Access-Control-Allow-Origin', '*', 'Content-Type', 'application/json', 'Content-Length', String(Buffer.byteLength(recordBody))]);
        res.end(recordBody);
      }
    : (req, res) => {
        const ok = req.method === 'GET' && req.url === '/';
        res.writeHead(ok ? 200 : 404, ['content-type', 'application/json', 'content-length', String((ok ? hello : notFound).length)]);
        res.end(ok ? hello : notFound);
      },
);
server.listen(port, host, () => console.log(`listening on ${host}:${port}`));

const shutdown = () => process.exit(0);
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
