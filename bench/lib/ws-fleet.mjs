// A fleet of WebSocket clients on worker threads, for the realtime benchmark: reading 10,000
// frames takes one Node thread longer than sending them takes the server, so the sockets are
// spread over threads and each stamps arrival with an absolute clock (timeOrigin + now).
//
// Main thread: `const fleet = await Fleet.open(url, count, threads, firstFrames)`;
// `fleet.reset()` before a round; `await fleet.collect()` → Float64Array of arrival times (ms,
// absolute; 0 = nothing yet) per socket; `await fleet.close()`.
// `firstFrames`: JSON strings each socket sends after its connect frame (one answer awaited each).
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { performance } from 'node:perf_hooks';
import WebSocket from 'ws';

const clock = () => performance.timeOrigin + performance.now();

if (!isMainThread && workerData?.fleet) {
  const { url, count, firstFrames } = workerData;
  const arrived = new Float64Array(count);
  const sockets = [];
  const open = (i) =>
    new Promise((resolve, reject) => {
      const ws = new WebSocket(url, { perMessageDeflate: false });
      sockets.push(ws);
      let pending = -1;
      ws.on('message', (d) => {
        const t = clock();
        if (pending === -1) {
          pending = firstFrames.length;
          for (const f of firstFrames) ws.send(f);
          if (pending === 0) resolve();
          return;
        }
        if (pending > 0) {
          const text = d.toString();
          if (text.includes('"error"')) reject(new Error(`socket ${i}: ${text}`));
          if (--pending === 0) resolve();
          return;
        }
        if (arrived[i] === 0) arrived[i] = t;
      });
      ws.on('error', reject);
    });
  (async () => {
    for (let base = 0; base < count; base += 250) {
      await Promise.all(Array.from({ length: Math.min(250, count - base) }, (_, k) => open(base + k)));
    }
    parentPort.postMessage({ ready: true });
  })().catch((err) => parentPort.postMessage({ error: String(err?.stack ?? err) }));
  parentPort.on('message', (m) => {
    if (m === 'reset') {
      arrived.fill(0);
      parentPort.postMessage({ reset: true });
    } else if (m === 'collect') {
      parentPort.postMessage({ arrived: Array.from(arrived) });
    } else if (m === 'close') {
      for (const ws of sockets) ws.terminate();
      setTimeout(() => process.exit(0), 200);
    }
  });
}

export class Fleet {
  constructor(workers) {
    this.workers = workers;
  }

  static async open(url, count, threads, firstFrames) {
    const per = Math.ceil(count / threads);
    const workers = [];
    for (let t = 0; t < threads; t++) {
      const n = Math.min(per, count - t * per);
      if (n <= 0) break;
      workers.push(new Worker(new URL(import.meta.url), { workerData: { fleet: true, url, count: n, firstFrames } }));
    }
    await Promise.all(workers.map((w) => once(w, (m) => m.ready)));
    return new Fleet(workers);
  }

  async reset() {
    await Promise.all(this.workers.map((w) => {
      const p = once(w, (m) => m.reset);
      w.postMessage('reset');
      return p;
    }));
  }

  async collect() {
    const parts = await Promise.all(this.workers.map((w) => {
      const p = once(w, (m) => m.arrived);
      w.postMessage('collect');
      return p;
    }));
    return Float64Array.from(parts.flatMap((m) => m.arrived));
  }

  async close() {
    await Promise.all(this.workers.map((w) => {
      const p = new Promise((r) => w.once('exit', r));
      w.postMessage('close');
      return p;
    }));
  }
}

export const now = clock;

function once(worker, pred) {
  return new Promise((resolve, reject) => {
    const on = (m) => {
      if (m?.error) {
        worker.off('message', on);
        reject(new Error(m.error));
      } else if (pred(m)) {
        worker.off('message', on);
        resolve(m);
      }
    };
    worker.on('message', on);
    worker.once('error', reject);
  });
}
