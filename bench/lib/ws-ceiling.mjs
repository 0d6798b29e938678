// The realtime ceiling: bare uWebSockets.js fan-out, no database, no rules, no serialization.
//
//   node bench/lib/ws-ceiling.mjs PORT
//
// WebSocket at /ws: every socket joins one native topic. POST /publish with a body publishes that
// body to every socket of the topic (uWS's own pub/sub) and answers 204. Prints "listening" once
// ready. The realtime benchmark measures svc's create-to-delivery latency against this in the same
// run, from the same client: the time the client spends reading frames is in both.
import uWS from '@trufflesuite/uws-js-unofficial';

if (typeof uWS.getParts !== 'function') {
  console.error('ws-ceiling: the native uWebSockets.js addon did not load; refusing to start');
  process.exit(1);
}
const port = Number(process.argv[2]);
const app = uWS.App()
  .ws('/ws', {
    maxBackpressure: 4 * 1024 * 1024,
    idleTimeout: 120,
    open: (ws) => {
      ws.subscribe('t');
      ws.send('{"type":"connect"}');
    },
  })
  .post('/publish', (res) => {
    const chunks = [];
    res.onAborted(() => {});
    res.onData((ab, last) => {
      chunks.push(Buffer.from(ab.slice(0)));
      if (!last) return;
      const body = Buffer.concat(chunks).toString();
      app.publish('t', body, false);
      res.cork(() => res.writeStatus('204 No Content').endWithoutBody());
    });
  });
app.listen('127.0.0.1', port, (s) => {
  if (!s) {
    console.error(`ws-ceiling: cannot listen on ${port}`);
    process.exit(1);
  }
  console.log('listening');
});
process.on('SIGTERM', () => process.exit(0));
