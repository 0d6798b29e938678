/**
 * Measurement engine of the benchmark suite: a probe produces one timed sample (a wrk run, two
 * concurrent wrk runs, an in-process rate), and series of probes are warmed up and then measured
 * interleaved (a, b, a, b, …) so slow drift of a shared machine affects every side alike.
 */
import { median, runWrk, type WrkResult } from './wrk.js';

/** One measured run. Rates are per second, latencies in milliseconds. */
export interface Sample {
  rps: number;
  p50Ms: number;
  p99Ms: number;
  /** socket errors plus non-2xx answers (minus any the probe accounts for separately) */
  errors: number;
  requests: number;
  durationS: number;
  /** the concurrent second load of a mixed probe */
  secondary?: Sample;
  /** probe-specific numbers (e.g. requests past the end of a delete list) */
  extra?: Record<string, number>;
}

/** Runs one sample of about `durationS` seconds; `phase` says whether it is a warm-up. */
export type Probe = (durationS: number, phase: 'warmup' | 'run', runIndex: number) => Promise<Sample>;

/** A load wrk puts on one URL. */
export interface Load {
  url: string;
  connections?: number;
  script?: string;
  scriptArgs?: string[];
  headers?: Record<string, string>;
  timeoutS?: number;
}

/** Median figures and totals of a measured series. */
export interface Summary {
  rps: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  requests: number;
  /** rps of every measured run, in order */
  runs: number[];
}

/** A measured series: its identity, every sample (warm-ups apart) and the medians. */
export interface SeriesResult {
  key: string;
  label: string;
  kind: 'svc' | 'fastify' | 'ceiling' | 'argon2';
  warmups: Sample[];
  samples: Sample[];
  summary: Summary;
  /** summary of the secondary load of a mixed series */
  secondary?: Summary;
  /**
   * Per-round ratios to the references measured in the same rounds (run i of this series over
   * run i of the reference): `ceiling`, and `fastify` when its Fastify reference ran alongside.
   */
  roundRatios?: { ceiling?: number[]; fastify?: number[] };
  /** the group of the run it was measured in */
  group?: string;
}

/** Settings shared by every series of a run. */
export interface MeasureSettings {
  warmupS: number;
  durationS: number;
  runs: number;
  threads: number;
}

/** A series to measure: identity plus its probe. */
export interface SeriesSpec {
  key: string;
  label: string;
  kind: SeriesResult['kind'];
  probe: Probe;
  /** false: no warm-up run (a reference already warm) */
  warmup?: boolean;
}

/** Converts a wrk result into a sample. */
export function fromWrk(r: WrkResult): Sample {
  return {
    rps: r.requestsPerSec,
    p50Ms: r.latencyP50Ms,
    p99Ms: r.latencyP99Ms,
    errors: r.errors,
    requests: r.requests,
    durationS: r.durationS,
    extra: { non2xx: r.non2xx, timeouts: r.socketErrors.timeout },
  };
}

/** A probe that runs wrk once on `load` with the suite's thread count. */
export function wrkProbe(load: Load, threads = 1): Probe {
  return async (durationS) => fromWrk(await runWrk({ ...load, threads, durationS }));
}

/** A probe that runs two wrk processes at once; the sample is the first, the second rides along. */
export function mixedProbe(primary: Load, secondary: Load, threads = 1): Probe {
  return async (durationS) => {
    const [a, b] = await Promise.all([
      runWrk({ ...primary, threads, durationS }),
      runWrk({ ...secondary, threads, durationS }),
    ]);
    return { ...fromWrk(a), secondary: fromWrk(b) };
  };
}

/** run i of `a` over run i of `b`, for every round both have. */
export function pairRatios(a: SeriesResult, b: SeriesResult): number[] {
  const n = Math.min(a.samples.length, b.samples.length);
  return Array.from({ length: n }, (_, i) => a.samples[i]!.rps / b.samples[i]!.rps);
}

/** Medians of a list of samples (the secondary load summarised apart). */
export function summarise(samples: Sample[]): Summary {
  return {
    rps: median(samples.map((s) => s.rps)),
    p50Ms: median(samples.map((s) => s.p50Ms)),
    p99Ms: median(samples.map((s) => s.p99Ms)),
    errors: samples.reduce((a, s) => a + s.errors, 0),
    requests: samples.reduce((a, s) => a + s.requests, 0),
    runs: samples.map((s) => s.rps),
  };
}

const fmt = (n: number, d = 0): string => (Number.isFinite(n) ? n.toFixed(d) : 'n/a');

/**
 * Warms every series up once, then runs `settings.runs` rounds, each measuring every series in
 * order. Returns one result per spec, in spec order. `log` receives one line per run; `settle`
 * (optional) runs after every probe, e.g. to let the servers drain their queues.
 */
export async function measureInterleaved(
  specs: SeriesSpec[],
  settings: MeasureSettings,
  log: (line: string) => void,
  settle: () => Promise<unknown> = async () => undefined,
): Promise<SeriesResult[]> {
  const out: SeriesResult[] = specs.map((s) => ({
    key: s.key,
    label: s.label,
    kind: s.kind,
    warmups: [],
    samples: [],
    summary: summarise([{ rps: NaN, p50Ms: NaN, p99Ms: NaN, errors: 0, requests: 0, durationS: 0 }]),
  }));
  if (settings.warmupS > 0) {
    for (let i = 0; i < specs.length; i++) {
      if (specs[i]!.warmup === false) continue;
      out[i]!.warmups.push(await specs[i]!.probe(settings.warmupS, 'warmup', 0));
      await settle();
    }
  }
  for (let run = 1; run <= settings.runs; run++) {
    for (let i = 0; i < specs.length; i++) {
      const s = await specs[i]!.probe(settings.durationS, 'run', run);
      await settle();
      out[i]!.samples.push(s);
      const second = s.secondary ? ` | second load ${fmt(s.secondary.rps)} req/s, errors ${s.secondary.errors}` : '';
      log(`  ${specs[i]!.label} run ${run}/${settings.runs}: ${fmt(s.rps)} /s, p50 ${fmt(s.p50Ms, 2)} ms, p99 ${fmt(s.p99Ms, 2)} ms, errors ${s.errors}${second}`);
    }
  }
  for (const r of out) {
    r.summary = summarise(r.samples);
    const secondaries = r.samples.flatMap((s) => (s.secondary ? [s.secondary] : []));
    if (secondaries.length) r.secondary = summarise(secondaries);
  }
  return out;
}
