/**
 * Resumable upload benchmark: `npm run bench:uploads`. One server with
 * `--features=resumable-uploads` and budgets of 1 GiB (upload and aggregate), 8 MiB chunks:
 *
 * 1. one 1 GiB upload in 8 MiB PATCH chunks over loopback, then its commit: MB/s of the transfer
 *    (target ≥ 200) and of transfer plus commit; the server's RSS growth during it beyond the
 *    declared payload (the RAM budget the session reserves), target under 64 MB. The baseline of
 *    the same run is the same bytes sent as the same 8 MiB requests to a node:http server that
 *    discards them (the loopback ceiling of this client);
 * 2. 100 concurrent uploads of 10 MiB each (create, two chunks, commit): errors (target none),
 *    wall time and MB/s.
 * The stored 1 GiB file is checked against the sent bytes (SHA-256). Writes
 * bench/results/uploads.md and prints it.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { Agent, createServer, request } from 'node:http';
import { join } from 'node:path';
import { startSvc, REPO_ROOT } from './lib/svc.js';
import { procStatusBytes } from './lib/rss.js';

const MIB = 1024 * 1024;
const GIB = 1024 * MIB;
const CHUNK = 8 * MIB;
const log = (m: string) => console.error(`bench:uploads: ${m}`);

async function json(url: string, method: string, token: string, body?: unknown): Promise<any> {
  const res = await fetch(url, { method, headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) }, body: body ? JSON.stringify(body) : undefined });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${url}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

const agent = new Agent({ keepAlive: true, maxSockets: 128 });

/** One PATCH through node:http (a kept-alive connection; the body written as one buffer). */
function patch(url: string, token: string, offset: number, bytes: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const req = request({ agent, host: u.hostname, port: u.port, path: u.pathname, method: 'PATCH', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/octet-stream', 'content-length': String(bytes.length), 'upload-offset': String(offset) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('end', () => (res.statusCode === 204 ? resolve() : reject(new Error(`PATCH at ${offset}: ${res.statusCode} ${text}`))));
    });
    req.on('error', reject);
    req.end(bytes);
  });
}

/** The loopback ceiling: the same requests to a server that only reads and drops the bytes. */
async function ceiling(chunk: Buffer, total: number): Promise<number> {
  const sink = createServer((req, res) => {
    req.on('data', () => {});
    req.on('end', () => { res.statusCode = 204; res.end(); });
  });
  await new Promise<void>((r) => sink.listen(0, '127.0.0.1', () => r()));
  const url = `http://127.0.0.1:${(sink.address() as { port: number }).port}/`;
  const t = performance.now();
  for (let at = 0; at < total; at += chunk.length) await patch(url, '', at, chunk);
  const s = (performance.now() - t) / 1000;
  sink.close();
  return total / MIB / s;
}

async function sha256File(path: string): Promise<string> {
  const h = createHash('sha256');
  for await (const b of createReadStream(path)) h.update(b as Buffer);
  return h.digest('hex');
}

async function main(): Promise<void> {
  const svc = await startSvc({
    extra: ['--features=resumable-uploads'],
    env: {
      SERVICE_UPLOAD_MAX_SESSIONS: '128', SERVICE_UPLOAD_MAX_SESSIONS_PER_PRINCIPAL: '128',
      SERVICE_UPLOAD_MAX_UPLOAD_BYTES: String(GIB), SERVICE_UPLOAD_MAX_TOTAL_BYTES: String(GIB), SERVICE_UPLOAD_MAX_CHUNK_BYTES: String(CHUNK),
    },
  });
  try {
    const token = (await json(`${svc.url}/api/collections/_superusers/auth-with-password`, 'POST', '', { identity: svc.email, password: svc.password })).token as string;
    const col = await json(`${svc.url}/api/collections`, 'POST', token, { name: 'blobs', type: 'base', fields: [{ name: 'file', type: 'file', options: { maxSize: GIB } }] });
    const pid = svc.proc.child.pid!;
    const chunk = randomBytes(CHUNK);

    // 1. one 1 GiB upload
    const ceilingMBs = await ceiling(chunk, GIB);
    log(`loopback ceiling ${ceilingMBs.toFixed(0)} MB/s`);
    const rec = await json(`${svc.url}/api/collections/blobs/records`, 'POST', token, {});
    const rssBefore = procStatusBytes(pid, 'VmRSS');
    let rssPeak = rssBefore;
    const sampler = setInterval(() => { rssPeak = Math.max(rssPeak, procStatusBytes(pid, 'VmRSS')); }, 20);
    const sent = createHash('sha256');
    const t0 = performance.now();
    const s = await json(`${svc.url}/api/collections/blobs/records/${rec.id}/uploads`, 'POST', token, { field: 'file', filename: 'big.bin', length: GIB });
    for (let at = 0; at < GIB; at += CHUNK) await patch(`${svc.url}/api/uploads/${s.id}`, token, at, chunk);
    const t1 = performance.now();
    await json(`${svc.url}/api/uploads/${s.id}/commit`, 'POST', token);
    const t2 = performance.now();
    clearInterval(sampler);
    rssPeak = Math.max(rssPeak, procStatusBytes(pid, 'VmRSS'));
    const transferMBs = GIB / MIB / ((t1 - t0) / 1000);
    const totalMBs = GIB / MIB / ((t2 - t0) / 1000);
    const growthBeyond = rssPeak - rssBefore - GIB;
    const dir = join(svc.dataDir, 'storage', col.id, rec.id);
    const stored = join(dir, readdirSync(dir)[0]);
    for (let at = 0; at < GIB; at += CHUNK) sent.update(chunk);
    const same = statSync(stored).size === GIB && (await sha256File(stored)) === sent.digest('hex');
    log(`1 GiB: transfer ${transferMBs.toFixed(0)} MB/s, with commit ${totalMBs.toFixed(0)} MB/s, RSS growth beyond the payload ${(growthBeyond / MIB).toFixed(1)} MiB, stored bytes identical: ${same}`);

    // 2. 100 concurrent 10 MiB uploads
    const N = 100;
    const SIZE = 10 * MIB;
    const recs = await Promise.all(Array.from({ length: N }, () => json(`${svc.url}/api/collections/blobs/records`, 'POST', token, {})));
    let errors = 0;
    const errorSamples: string[] = [];
    const t3 = performance.now();
    await Promise.all(recs.map(async (r) => {
      try {
        const u = await json(`${svc.url}/api/collections/blobs/records/${r.id}/uploads`, 'POST', token, { field: 'file', filename: 'ten.bin', length: SIZE });
        await patch(`${svc.url}/api/uploads/${u.id}`, token, 0, chunk);
        await patch(`${svc.url}/api/uploads/${u.id}`, token, CHUNK, chunk.subarray(0, SIZE - CHUNK));
        await json(`${svc.url}/api/uploads/${u.id}/commit`, 'POST', token);
      } catch (err) {
        errors++;
        if (errorSamples.length < 3) errorSamples.push(String(err));
      }
    }));
    const concurrentS = (performance.now() - t3) / 1000;
    log(`100 × 10 MiB concurrently: ${errors} errors, ${concurrentS.toFixed(2)} s, ${((N * SIZE) / MIB / concurrentS).toFixed(0)} MB/s`);

    const md = [
      '# Resumable uploads (`npm run bench:uploads`)',
      '',
      `Run ${new Date().toISOString()}, Node ${process.version}, one server, budgets of 1 GiB, 8 MiB chunks.`,
      '',
      '| series | result | target |',
      '| --- | --- | --- |',
      `| 1 GiB in 8 MiB chunks: transfer | ${transferMBs.toFixed(0)} MB/s (${(transferMBs / ceilingMBs).toFixed(2)} of the loopback ceiling, ${ceilingMBs.toFixed(0)} MB/s) | ≥ 200 MB/s |`,
      `| 1 GiB: transfer and commit (file written) | ${totalMBs.toFixed(0)} MB/s | — |`,
      `| server RSS growth beyond the 1 GiB payload | ${(growthBeyond / MIB).toFixed(1)} MiB | < 64 MB |`,
      `| stored file identical to the sent bytes (SHA-256) | ${same ? 'yes' : 'NO'} | yes |`,
      `| 100 concurrent uploads of 10 MiB | ${errors} errors, ${concurrentS.toFixed(2)} s (${((N * SIZE) / MIB / concurrentS).toFixed(0)} MB/s) | no errors |`,
      ...(errorSamples.length ? ['', 'Errors:', ...errorSamples.map((e) => `- ${e}`)] : []),
      '',
    ].join('\n');
    mkdirSync(join(REPO_ROOT, 'bench', 'results'), { recursive: true });
    writeFileSync(join(REPO_ROOT, 'bench', 'results', 'uploads.md'), md);
    console.log(md);
    if (errors || !same) process.exitCode = 1;
  } finally {
    await svc.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
