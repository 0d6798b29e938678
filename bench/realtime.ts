/**
 * Realtime benchmark: `npm run bench:realtime [-- --sockets=10000 --owners=1000
 * --sustain-s=60 --rate=100]`. Against a real `svc serve` and, in the same run, the ceiling
 * (bench/lib/ws-ceiling.mjs: bare uWebSockets.js pub/sub, same client, same frames' size):
 *
 * 1. 10,000 WebSockets subscribed to a `@public` collection: the server's added RSS;
 * 2. one create at a time reaches all 10,000: create-to-delivery latency (from the client sending
 *    the create to each socket reading its event; an upper bound of commit-to-delivery), p50/p99,
 *    beside the ceiling publishing one frame of the same size to as many sockets;
 * 3. 1,000 distinct signed-in subscribers of an owner-rule collection (`author =
 *    @request.auth.id`), records created for random owners: create-to-delivery p99, and that
 *    every event reached its owner and no one else;
 * 4. 100 creates/s for 60 s to 1,000 subscribers (100k deliveries/s): deliveries counted per
 *    socket, drops read from GET /api/realtime/metrics.
 *
 * The report replaces the "Realtime" section of bench/RESULTS.md (between its markers) and is
 * also written to bench/results/realtime.md.
 */
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import WebSocket from 'ws';
import { REPO_ROOT, SvcClient, startSvc, type SvcInstance } from './lib/svc.js';
import { freePort, startProcess } from './lib/wrk.js';
import { procStatusBytes, settle } from './lib/rss.js';
import { createUsersCollection, seedUsers, userId, userToken } from './lib/seed.js';
// @ts-expect-error plain JavaScript module (runs on worker threads without a TypeScript loader)
import { Fleet, now as fleetNow } from './lib/ws-fleet.mjs';

const argv = process.argv.slice(2);
const arg = (name: string, dflt: number): number => Number(argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? dflt);
const SOCKETS = arg('sockets', 10_000);
const OWNERS = arg('owners', 1_000);
const SUSTAIN_S = arg('sustain-s', 60);
const RATE = arg('rate', 100);
const SUSTAIN_SOCKETS = arg('sustain-sockets', 1_000);
const ROUNDS = arg('rounds', 10);
/** client threads reading the 10,000 sockets (the machine has 2 cores) */
const CLIENT_THREADS = arg('client-threads', 2);

const log = (m: string) => console.error(`bench:realtime: ${m}`);
const now = () => performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}
const summary = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return { n: s.length, p50: percentile(s, 50), p99: percentile(s, 99), max: s[s.length - 1] ?? NaN };
};
const fmt = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : '–');

/**
 * Opens `n` sockets to `url` (500 at a time), runs `onOpen` on each, and calls `onFrame(i, text,
 * t)` for every frame. Resolves when all are open and `ready(i)` has been reported by each.
 */
async function openSockets(n: number, url: string, onFrame: (i: number, text: string, t: number) => void, firstFrames: (i: number) => string[]): Promise<WebSocket[]> {
  const sockets: WebSocket[] = new Array(n);
  for (let base = 0; base < n; base += 500) {
    const batch: Array<Promise<void>> = [];
    for (let i = base; i < Math.min(n, base + 500); i++) {
      batch.push(
        new Promise<void>((resolve, reject) => {
          const ws = new WebSocket(url, { perMessageDeflate: false });
          sockets[i] = ws;
          let pending = -1;
          ws.on('message', (d: Buffer) => {
            const t = now();
            const text = d.toString();
            if (pending === -1 && text.includes('"connect"')) {
              const frames = firstFrames(i);
              pending = frames.length;
              for (const f of frames) ws.send(f);
              if (pending === 0) resolve();
              return;
            }
            if (pending > 0 && (text.startsWith('{"type":"ack"') || text.startsWith('{"type":"auth"'))) {
              if (text.includes('"error"')) reject(new Error(`socket ${i}: ${text}`));
              if (--pending === 0) resolve();
              return;
            }
            if (text.startsWith('{"type":"error"')) reject(new Error(`socket ${i}: ${text}`));
            onFrame(i, text, t);
          });
          ws.on('error', reject);
        }),
      );
    }
    await Promise.all(batch);
  }
  return sockets;
}

const closeAll = async (sockets: WebSocket[]) => {
  for (const ws of sockets) ws.terminate();
  await sleep(500);
};

/** The sequence number in an event's title (`rt-<n>-…`). */
function seqOf(text: string): number {
  const at = text.indexOf('"title":"rt-');
  if (at < 0) return -1;
  return parseInt(text.slice(at + 12, at + 24), 10);
}

async function main(): Promise<void> {
  const started = new Date();
  const rows: string[] = [];
  const notes: string[] = [];
  const svc: SvcInstance = await startSvc({ env: { SERVICE_RATE_LIMIT_MAX: '0', SERVICE_REALTIME_MAX_CONNECTIONS: String(SOCKETS + 1000), SERVICE_MAX_CONNECTIONS: String(SOCKETS * 2 + 1000) } });
  const ceilingPort = await freePort();
  const ceiling = startProcess('ws-ceiling', process.execPath, [join(REPO_ROOT, 'bench', 'lib', 'ws-ceiling.mjs'), String(ceilingPort)], { cwd: REPO_ROOT });
  const pid = svc.proc.child.pid!;
  try {
    const su = new SvcClient(svc.url);
    await su.loginSuperuser(svc.email, svc.password);
    const usersId = await createUsersCollection(su);
    await su.request('POST', '/api/collections', {
      name: 'rt_public', type: 'base', listRule: '@public', viewRule: '@public',
      fields: [{ name: 'title', type: 'text' }, { name: 'body', type: 'text' }],
    });
    await su.request('POST', '/api/collections', {
      name: 'rt_owned', type: 'base', listRule: 'author = @request.auth.id', viewRule: 'author = @request.auth.id',
      fields: [{ name: 'title', type: 'text' }, { name: 'author', type: 'relation', options: { collectionId: usersId, maxSelect: 1 } }],
      indexes: [{ name: 'rt_owned_author', fields: ['author'] }],
    });
    const body = 'x'.repeat(120);
    const wsUrl = `${svc.url.replace('http', 'ws')}/api/realtime`;

    // ---- 1 and 2: 10,000 sockets on a @public collection, read by a fleet of client threads
    await settle([pid]);
    const rssBefore = procStatusBytes(pid, 'VmRSS');
    const fleet = await Fleet.open(wsUrl, SOCKETS, CLIENT_THREADS, ['{"action":"subscribe","topic":"rt_public"}']);
    await settle([pid]);
    const rssAfter = procStatusBytes(pid, 'VmRSS');
    const addedMb = (rssAfter - rssBefore) / 1048576;
    log(`${SOCKETS} sockets subscribed: RSS ${fmt(rssBefore / 1048576)} → ${fmt(rssAfter / 1048576)} MB`);

    /** One round: reset the fleet, send, wait until every socket read a frame (or 2 s). */
    const fanOut = async (send: () => Promise<unknown>): Promise<{ lat: number[]; missing: number }> => {
      await fleet2.reset();
      const t0 = fleetNow();
      await send();
      let arrived = await fleet2.collect();
      for (let w = 0; w < 40 && arrived.some((t) => t === 0); w++) {
        await sleep(50);
        arrived = await fleet2.collect();
      }
      const lat: number[] = [];
      let missing = 0;
      for (const t of arrived) {
        if (t === 0) missing++;
        else lat.push(t - t0);
      }
      return { lat, missing };
    };
    let fleet2 = fleet;
    const svcLat: number[] = [];
    let svcMissing = 0;
    for (let r = 0; r < ROUNDS; r++) {
      const { lat, missing } = await fanOut(() => su.request('POST', '/api/collections/rt_public/records', { title: `rt-${r}-`, body }));
      svcLat.push(...lat);
      svcMissing += missing;
      await sleep(200);
    }
    await fleet.close();
    // the server's own part: commit to the last frame handed to the sockets, per batch
    const serverSide = (await su.request<{ deliveryMs: { p50: number; p99: number; max: number; batches: number } | null }>('GET', '/api/realtime/metrics')).deliveryMs;

    // the ceiling: the same fleet, the same number of sockets, frames of the same size
    for (let w = 0; w < 200 && !ceiling.output().includes('listening'); w++) await sleep(50);
    if (!ceiling.output().includes('listening')) throw new Error(`the ceiling did not start: ${ceiling.output()}`);
    const frame = JSON.stringify({ type: 'event', topic: 'rt_public', action: 'create', record: { collectionId: 'x'.repeat(15), collectionName: 'rt_public', id: 'y'.repeat(15), created: '2026-01-01 00:00:00.000Z', updated: '2026-01-01 00:00:00.000Z', title: 'rt-0-', body } });
    fleet2 = await Fleet.open(`ws://127.0.0.1:${ceilingPort}/ws`, SOCKETS, CLIENT_THREADS, []);
    const ceilLat: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const { lat } = await fanOut(() => fetch(`http://127.0.0.1:${ceilingPort}/publish`, { method: 'POST', body: frame }));
      ceilLat.push(...lat);
      await sleep(200);
    }
    await fleet2.close();
    const s2 = summary(svcLat);
    const c2 = summary(ceilLat);
    rows.push(`| ${SOCKETS.toLocaleString('en')} subscribed WebSockets: added server RSS | ${fmt(addedMb)} MB |  |  | under 150 MB: ${addedMb < 150 ? 'met' : '**not met**'} |`);
    rows.push(`| one create on a @public collection → ${SOCKETS.toLocaleString('en')} subscribers (${ROUNDS} creates) | p50 ${fmt(s2.p50)} ms, p99 ${fmt(s2.p99)} ms, max ${fmt(s2.max)} ms | p50 ${fmt(c2.p50)} ms, p99 ${fmt(c2.p99)} ms | ${(s2.p99 / c2.p99).toFixed(2)} | p99 under 100 ms: ${s2.p99 < 100 ? 'met' : '**not met**'} as the client reads it; ${svcMissing} deliveries missing |`);
    if (serverSide) rows.push(`| ↳ the server's part of it: commit to the last of the ${SOCKETS.toLocaleString('en')} frames handed to the sockets (${serverSide.batches} batches) | p50 ${fmt(serverSide.p50)} ms, p99 ${fmt(serverSide.p99)} ms, max ${fmt(serverSide.max)} ms |  |  | the rest of the latency above is the kernel and the client reading |`);
    log(`public fan-out: svc p99 ${fmt(s2.p99)} ms, ceiling p99 ${fmt(c2.p99)} ms, missing ${svcMissing}`);

    // ---- 3: 1,000 distinct signed-in subscribers of an owner-rule collection
    await seedUsers(svc.url, su.token, OWNERS);
    const tokens: string[] = [];
    for (let base = 0; base < OWNERS; base += 8) tokens.push(...(await Promise.all(Array.from({ length: Math.min(8, OWNERS - base) }, (_, k) => userToken(svc.url, base + k)))));
    const sentAt = new Map<number, { t0: number; owner: number }>();
    const ownerLat: number[] = [];
    let wrongOwner = 0;
    const ownerSockets = await openSockets(OWNERS, wsUrl, (i, text, t) => {
      const seq = seqOf(text);
      const s = sentAt.get(seq);
      if (!s) return;
      if (s.owner !== i) wrongOwner++;
      ownerLat.push(t - s.t0);
      sentAt.delete(seq);
    }, (i) => [JSON.stringify({ action: 'auth', token: tokens[i] }), '{"action":"subscribe","topic":"rt_owned"}']);
    const OWNED_CREATES = 500;
    let seq = 1_000_000;
    for (let k = 0; k < OWNED_CREATES; k += 25) {
      await Promise.all(Array.from({ length: 25 }, () => {
        const owner = Math.floor(Math.random() * OWNERS);
        const n = seq++;
        sentAt.set(n, { t0: now(), owner });
        return su.request('POST', '/api/collections/rt_owned/records', { title: `rt-${n}-`, author: userId(owner) });
      }));
      await sleep(20);
    }
    for (let w = 0; w < 300 && sentAt.size > 0; w++) await sleep(10);
    const ownerMissing = sentAt.size;
    await closeAll(ownerSockets);
    const s3 = summary(ownerLat);
    rows.push(`| owner-rule collection, ${OWNERS.toLocaleString('en')} distinct signed-in subscribers, ${OWNED_CREATES} creates for random owners | p50 ${fmt(s3.p50)} ms, p99 ${fmt(s3.p99)} ms, max ${fmt(s3.max)} ms |  |  | p99 under 200 ms: ${s3.p99 < 200 ? 'met' : '**not met**'}; ${ownerMissing} missing, ${wrongOwner} delivered to another user |`);
    log(`owner rule: p99 ${fmt(s3.p99)} ms, missing ${ownerMissing}, wrong ${wrongOwner}`);

    // ---- 4: sustained 100 creates/s × 1,000 subscribers
    const counts = new Uint32Array(SUSTAIN_SOCKETS);
    const sustainLat: number[] = [];
    const sent = new Map<number, number>();
    const sustainSockets = await openSockets(SUSTAIN_SOCKETS, wsUrl, (i, text, t) => {
      counts[i]++;
      if (i % 50 === 0) {
        const t0 = sent.get(seqOf(text));
        if (t0 !== undefined) sustainLat.push(t - t0);
      }
    }, () => ['{"action":"subscribe","topic":"rt_public"}']);
    const before = (await su.request<{ droppedConsumers: number; delivered: number }>('GET', '/api/realtime/metrics'));
    const total = RATE * SUSTAIN_S;
    const tStart = now();
    let issued = 0;
    let failed = 0;
    const inflight: Array<Promise<unknown>> = [];
    while (issued < total) {
      const due = Math.min(total, Math.floor(((now() - tStart) / 1000) * RATE) + 1);
      while (issued < due) {
        const n = 2_000_000 + issued++;
        sent.set(n, now());
        inflight.push(su.request('POST', '/api/collections/rt_public/records', { title: `rt-${n}-`, body }).catch(() => failed++));
      }
      await sleep(5);
    }
    await Promise.all(inflight);
    const elapsed = (now() - tStart) / 1000;
    for (let w = 0; w < 500; w++) {
      let done = true;
      for (let i = 0; i < SUSTAIN_SOCKETS; i++) if (counts[i] < total && sustainSockets[i].readyState === WebSocket.OPEN) done = false;
      if (done) break;
      await sleep(20);
    }
    const after = await su.request<{ droppedConsumers: number; delivered: number; deliveryMs: { p50: number; p99: number } | null }>('GET', '/api/realtime/metrics');
    let short = 0;
    let delivered = 0;
    for (let i = 0; i < SUSTAIN_SOCKETS; i++) {
      delivered += counts[i];
      if (counts[i] < total) short++;
    }
    const dropped = after.droppedConsumers - before.droppedConsumers;
    await closeAll(sustainSockets);
    const s4 = summary(sustainLat);
    rows.push(`| ${RATE} creates/s × ${SUSTAIN_SOCKETS.toLocaleString('en')} subscribers for ${SUSTAIN_S} s | ${Math.round(delivered / elapsed).toLocaleString('en')} deliveries/s; p50 ${fmt(s4.p50)} ms, p99 ${fmt(s4.p99)} ms |  |  | ${delivered.toLocaleString('en')} of ${(total * SUSTAIN_SOCKETS).toLocaleString('en')} delivered; ${short} sockets short; ${dropped} dropped as slow consumers; ${failed} creates failed |`);
    log(`sustained: ${delivered} of ${total * SUSTAIN_SOCKETS}, short ${short}, dropped ${dropped}`);
    notes.push(`Creates issued at ${(total / elapsed).toFixed(1)}/s over ${elapsed.toFixed(1)} s; the server's own delivery time per batch in the sustained run (last 1,000 batches): p50 ${fmt(after.deliveryMs?.p50 ?? NaN)} ms, p99 ${fmt(after.deliveryMs?.p99 ?? NaN)} ms.`);

    const md = [
      '<!-- realtime:start -->',
      '## Realtime (`npm run bench:realtime`)',
      '',
      `Run on ${started.toISOString()}, Node ${process.version}, 2 shared cores: the server, the writer, the ceiling and the client (${CLIENT_THREADS} client threads reading the ${SOCKETS.toLocaleString('en')} sockets of the fan-out, one thread for the rest) share them, so every latency includes the client's own time to read its frames. Latency is measured from the client sending the create (or the publish) to each socket reading its frame: an upper bound of commit-to-delivery. The ceiling is bare uWebSockets.js pub/sub (bench/lib/ws-ceiling.mjs) publishing one frame of the same size to as many sockets, from the same client, in the same run.`,
      '',
      '| measure | svc | ceiling | × ceiling (p99) | target and verdict |',
      '| --- | --- | --- | ---: | --- |',
      ...rows,
      '',
      ...notes,
      '',
      'Anchors: PocketBase delivers over SSE with one goroutine per client and checks rules per client; Soketi and Centrifugo (uWS-class servers) publish millions of messages per second per node without per-delivery access rules. svc checks the rule and filter once per group of subscribers that share them (one query, or a comparison in JavaScript for owner rules) and serializes each record once per visibility class.',
      '<!-- realtime:end -->',
    ].join('\n');
    mkdirSync(join(REPO_ROOT, 'bench', 'results'), { recursive: true });
    writeFileSync(join(REPO_ROOT, 'bench', 'results', 'realtime.md'), `${md}\n`);
    const resultsPath = join(REPO_ROOT, 'bench', 'RESULTS.md');
    const current = readFileSync(resultsPath, 'utf8');
    const re = /<!-- realtime:start -->[\s\S]*<!-- realtime:end -->/;
    writeFileSync(resultsPath, re.test(current) ? current.replace(re, md) : `${current.trimEnd()}\n\n${md}\n`);
    console.log(md);
  } finally {
    await ceiling.stop();
    await svc.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
