// Bare uWebSockets.js hello-world: the ceiling the record-read benchmark is compared against.
//
//   node bench/hello-uws.mjs PORT [HOST]
//
// GET / answers {"hello":"world"} with content-type application/json; anything else is 404.
// Prints "listening on HOST:PORT" once ready; exits cleanly on SIGTERM or SIGINT.
import uWS from '@trufflesuite/uws-js-unofficial';

// The package silently falls back to a slow pure-JS shim when its native addon cannot load;
// only the native build exports getParts. A benchmark against the shim would be meaningless.
if (typeof uWS.getParts !== 'function') {
  console.error('hello-uws: the native uWebSockets.js addon did not load (JS fallback in use); refusing to start');
  process.exit(1);
}

const port = Number(process.argv[2]);
const host = process.argv[3] ?? '127.0.0.1';
if (!Number.isInteger(port) || port <= 0 || port > 65535) {
  console.error('usage: node bench/hello-uws.mjs PORT [HOST]');
  process.exit(2);
}

const body = JSON.stringify({ hello: 'world' });

const app = uWS.App()
  .get('/', (res) => {
    res.cork(() => {
      res.writeHeader('content-type', 'application/json').end(body);
    });
  })
  .any('/*', (res) => {
    res.cork(() => {
      res.writeStatus('404 Not Found').writeHeader('content-type', 'application/json').end('{"status":404}');
    });
  });

let listenSocket = null;
app.listen(host, port, (socket) => {
  if (!socket) {
    console.error(`hello-uws: could not listen on ${host}:${port}`);
    process.exit(1);
  }
  listenSocket = socket;
  console.log(`listening on ${host}:${port}`);
});

const shutdown = () => {
  if (listenSocket) uWS.us_listen_socket_close(listenSocket);
  listenSocket = null;
  // Open keep-alive connections would keep the loop alive; exit explicitly.
  process.exit(0);
};
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
