// Listening and shutting down for the bare uWebSockets.js servers of the floors
// (bench/list-floor.mjs, bench/read-floor.mjs).
import uWS from '@trufflesuite/uws-js-unofficial';

/**
 * Listens with `app` on 127.0.0.1:`port`, prints "listening on 127.0.0.1:PORT" once ready (what
 * bench/lib/wrk.ts waits for) or exits 1 naming `name`, and exits 0 on SIGTERM or SIGINT (open
 * keep-alive connections would keep the loop alive).
 */
export function listenUntilSignal(app, port, name) {
  let listenSocket = null;
  app.listen('127.0.0.1', port, (socket) => {
    if (!socket) {
      console.error(`${name}: could not listen on 127.0.0.1:${port}`);
      process.exit(1);
    }
    listenSocket = socket;
    console.log(`listening on 127.0.0.1:${port}`);
  });
  const shutdown = () => {
    if (listenSocket) uWS.us_listen_socket_close(listenSocket);
    process.exit(0);
  };
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
}
