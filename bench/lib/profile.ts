/**
 * Summaries of V8 CPU profiles (`node --cpu-prof` writes one `.cpuprofile` JSON per thread):
 * self time per function, the figure that says where a thread spends its time.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

/** One function's share of a profile. */
export interface HotFunction {
  name: string;
  /** `file:line`, relative to the repository where possible */
  where: string;
  selfMs: number;
  /** share of the thread's non-idle time, 0..1 */
  share: number;
}

/** Summary of one thread's profile. */
export interface ProfileSummary {
  file: string;
  /** wall time covered, ms */
  totalMs: number;
  /** time not idle, ms */
  busyMs: number;
  top: HotFunction[];
}

/**
 * Reads `file` and returns its top `n` functions by self time ((idle) left out of shares).
 * `alias` maps a path prefix (relative to `repoRoot`) to another, e.g. a copy of dist back to `dist`.
 */
export function summariseProfile(file: string, repoRoot: string, n = 12, alias?: [string, string]): ProfileSummary {
  const p = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(p.nodes.map((node) => [node.id, node]));
  const selfUs = new Map<number, number>();
  const samples = p.samples ?? [];
  const deltas = p.timeDeltas ?? [];
  // The time delta before sample i+1 belongs to sample i (V8's convention).
  for (let i = 0; i < samples.length; i++) {
    const dt = deltas[i + 1] ?? 0;
    selfUs.set(samples[i]!, (selfUs.get(samples[i]!) ?? 0) + Math.max(0, dt));
  }
  const grouped = new Map<string, HotFunction>();
  let idleUs = 0;
  let totalUs = 0;
  for (const [id, us] of selfUs) {
    const node = byId.get(id);
    if (!node) continue;
    totalUs += us;
    const cf = node.callFrame;
    if (cf.functionName === '(idle)') {
      idleUs += us;
      continue;
    }
    let url = cf.url.startsWith('file://') ? relative(repoRoot, cf.url.slice(7)) : cf.url;
    if (alias && url.startsWith(alias[0])) url = alias[1] + url.slice(alias[0].length);
    const where = url ? `${url}:${cf.lineNumber + 1}` : '';
    const name = cf.functionName || '(anonymous)';
    const key = `${name}@${where}`;
    const hit = grouped.get(key) ?? { name, where, selfMs: 0, share: 0 };
    hit.selfMs += us / 1000;
    grouped.set(key, hit);
  }
  const busyMs = (totalUs - idleUs) / 1000;
  const top = [...grouped.values()].sort((a, b) => b.selfMs - a.selfMs).slice(0, n);
  for (const f of top) f.share = busyMs > 0 ? f.selfMs / busyMs : 0;
  return { file: relative(repoRoot, file), totalMs: totalUs / 1000, busyMs, top };
}

/** Summaries of every `.cpuprofile` in `dir`, busiest thread first (see {@link summariseProfile}). */
export function summariseProfiles(dir: string, repoRoot: string, n = 12, alias?: [string, string]): ProfileSummary[] {
  let files: string[] = [];
  try {
    files = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'));
  } catch {
    return [];
  }
  return files.map((f) => summariseProfile(join(dir, f), repoRoot, n, alias)).sort((a, b) => b.busyMs - a.busyMs);
}
