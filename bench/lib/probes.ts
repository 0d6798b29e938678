/**
 * Probes and checks beyond a plain wrk run: the raw argon2 verify rate (the bound of
 * auth-with-password), delete runs that walk a list of ids, and the check that every answered
 * create is already committed (visible to another connection on the database file).
 */
import { DEFAULT_HASH_THREADS } from '../../src/auth/passwords.js';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { verify } from '@node-rs/argon2';
import Database from 'libsql';
import { SvcClient as FastClient } from '../../examples/cities/client.js';
import { fromWrk, type Probe, type Sample } from './measure.js';
import { runWrk } from './wrk.js';
import type { Scenario } from './scenarios.js';

type Db = InstanceType<typeof Database>;

/** Opens the svc database file read-only (a separate connection: it sees committed rows only). */
export function openReadOnly(path: string): Db {
  const db = new Database(path, { readonly: true });
  db.exec('PRAGMA busy_timeout = 5000');
  return db;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/**
 * Raw `@node-rs/argon2` verify rate of `phc` (a hash the server stored, so the same parameters)
 * with `concurrency` verifications in flight on libuv's threads; by default as many as svc's
 * hashing threads (src/auth/passwords.ts), so both sides hash on as many cores.
 */
export const ARGON2_IN_FLIGHT = DEFAULT_HASH_THREADS;

export function argon2Probe(phc: string, password: string, concurrency = ARGON2_IN_FLIGHT): Probe {
  return async (durationS) => {
    const latencies: number[] = [];
    const t0 = performance.now();
    const end = t0 + durationS * 1000;
    const worker = async (): Promise<void> => {
      while (performance.now() < end) {
        const t = performance.now();
        if (!(await verify(phc, password))) throw new Error('argon2 probe: the stored hash did not verify');
        latencies.push(performance.now() - t);
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    const elapsedS = (performance.now() - t0) / 1000;
    latencies.sort((a, b) => a - b);
    return { rps: latencies.length / elapsedS, p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99), errors: 0, requests: latencies.length, durationS: elapsedS };
  };
}

/**
 * Splits `ids` into one file per delete run (warm-up first), sized in proportion to each run's
 * duration, in `dir`. Returns the file paths and their sizes.
 */
export function writeDeleteLists(ids: string[], dir: string, warmupS: number, durationS: number, runs: number): Array<{ file: string; size: number }> {
  const weights = [warmupS, ...Array.from({ length: runs }, () => durationS)];
  const total = weights.reduce((a, b) => a + b, 0);
  const out: Array<{ file: string; size: number }> = [];
  let at = 0;
  weights.forEach((w, i) => {
    const size = i === weights.length - 1 ? ids.length - at : Math.floor((ids.length * w) / total);
    const file = join(dir, `delete-ids-${i}.txt`);
    writeFileSync(file, ids.slice(at, at + size).join('\n') + '\n');
    out.push({ file, size });
    at += size;
  });
  return out;
}

/**
 * A delete probe: run i (0 = warm-up) walks list i. The rate counts successful deletes only;
 * requests past the end of a list (404s) go to `extra.exhausted`, not to the errors.
 */
export function deleteProbe(sc: Scenario, lists: Array<{ file: string; size: number }>, threads = 1): Probe {
  return async (durationS, phase, runIndex): Promise<Sample> => {
    const list = lists[phase === 'warmup' ? 0 : runIndex]!;
    const args = [...(sc.load.scriptArgs ?? [])];
    args[args.length - 1] = list.file;
    const r = await runWrk({ ...sc.load, scriptArgs: args, threads, durationS });
    const s = fromWrk(r);
    const exhausted = Math.max(0, r.requests - list.size);
    const ok = r.requests - r.non2xx;
    return { ...s, rps: ok / r.durationS, errors: s.errors - Math.min(exhausted, r.non2xx), extra: { ...s.extra, exhausted } };
  };
}

/**
 * Creates `count` small posts over `concurrency` keep-alive connections and, as each 201 arrives,
 * looks the new id up on `db` (a separate read-only connection). Resolves with how many answered
 * creates were not yet visible: 0 when every answer follows its commit.
 */
export async function commitCheck(baseUrl: string, token: string, collection: string, author: string, db: Db, count: number, concurrency = 64): Promise<{ creates: number; notVisible: number }> {
  const client = new FastClient(baseUrl, concurrency);
  client.token = token;
  const lookup = db.prepare(`SELECT 1 FROM "${collection}" WHERE id = ?`);
  let next = 0;
  let notVisible = 0;
  const worker = async (): Promise<void> => {
    while (next < count) {
      const i = next++;
      const rec = await client.request<{ id: string }>('POST', `/api/collections/${collection}/records`, {
        title: `commit check ${i}`, description: 'x', public: false, tags: ['news'], author,
      });
      if (lookup.get([rec.id]) === undefined) notVisible++;
    }
  };
  try {
    await Promise.all(Array.from({ length: concurrency }, worker));
  } finally {
    client.close();
  }
  return { creates: count, notVisible };
}
