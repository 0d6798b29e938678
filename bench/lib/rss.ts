/**
 * Memory of the server under test, from /proc/<pid>/status (Linux): the kernel's high-water mark
 * VmHWM (peak resident set over the process's life, all threads) and a sampled VmRSS that says
 * in which phase of the run the peak happened.
 */
import { readFileSync } from 'node:fs';

type StatusKey = 'VmHWM' | 'VmRSS' | 'RssAnon' | 'RssFile' | 'RssShmem';

/** Reads `Key:   12345 kB` lines of /proc/<pid>/status in bytes; NaN for each one unavailable. */
export function procStatus<K extends StatusKey>(pid: number, keys: readonly K[]): Record<K, number> {
  let text = '';
  try {
    text = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    /* process gone: NaN below */
  }
  const out = {} as Record<K, number>;
  for (const k of keys) {
    const m = new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(text);
    out[k] = m ? Number(m[1]) * 1024 : NaN;
  }
  return out;
}

/** One /proc status key in bytes; NaN when unavailable. */
export function procStatusBytes(pid: number, key: StatusKey): number {
  return procStatus(pid, [key])[key];
}

/** The largest VmRSS sample of a phase and what it was made of (bytes). */
export interface RssSample {
  rss: number;
  anon: number;
  file: number;
  shmem: number;
}

/** Polls VmRSS of one process and remembers the largest value seen per phase label. */
export class RssSampler {
  private timer: NodeJS.Timeout | undefined;
  private phaseName = 'start';
  /** largest sampled VmRSS per phase, with its breakdown */
  readonly byPhase = new Map<string, RssSample>();

  constructor(readonly pid: number, intervalMs = 200) {
    this.timer = setInterval(() => this.sample(), intervalMs);
    this.timer.unref();
  }

  /** Names the phase the following samples belong to (takes a sample first). */
  phase(name: string): void {
    this.sample();
    this.phaseName = name;
  }

  private sample(): void {
    const v = procStatus(this.pid, ['VmRSS', 'RssAnon', 'RssFile', 'RssShmem'] as const);
    if (!Number.isFinite(v.VmRSS)) return;
    if (v.VmRSS > (this.byPhase.get(this.phaseName)?.rss ?? 0)) {
      this.byPhase.set(this.phaseName, { rss: v.VmRSS, anon: v.RssAnon, file: v.RssFile, shmem: v.RssShmem });
    }
  }

  /**
   * Stops polling and returns the kernel's peak (VmHWM), the phase with the largest sample and
   * the largest sample of every phase (bytes, in phase order).
   */
  stop(): { peakBytes: number; maxSampledBytes: number; maxPhase: string; byPhase: Array<[string, RssSample]> } {
    this.sample();
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    let maxPhase = '';
    let maxSampled = 0;
    for (const [p, v] of this.byPhase) if (v.rss > maxSampled) [maxSampled, maxPhase] = [v.rss, p];
    return { peakBytes: procStatusBytes(this.pid, 'VmHWM'), maxSampledBytes: maxSampled, maxPhase, byPhase: [...this.byPhase] };
  }
}

/**
 * CPU time (user + system, clock ticks) a process has used so far, all its threads; NaN when
 * unavailable. `pid` may also name one thread as `<pid>/task/<tid>` (the main thread's tid is the pid).
 */
export function cpuTicks(pid: number | string): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14 and 15 of stat)
  } catch {
    return NaN;
  }
}

/**
 * Waits until every process in `pids` used less than `busyTicks` clock ticks of CPU over a
 * `windowMs` window, or `maxMs` passed: lets a server finish the requests still queued when wrk
 * stopped (argon2 logins, writes) before the next series is measured. Resolves with the wait, ms.
 */
export async function settle(pids: number[], windowMs = 100, busyTicks = 2, maxMs = 15_000): Promise<number> {
  const t0 = performance.now();
  let before = pids.map(cpuTicks);
  while (performance.now() - t0 < maxMs) {
    await new Promise((r) => setTimeout(r, windowMs));
    const now = pids.map(cpuTicks);
    const busy = now.some((v, i) => Number.isFinite(v) && v - before[i]! >= busyTicks);
    if (!busy) break;
    before = now;
  }
  return performance.now() - t0;
}
