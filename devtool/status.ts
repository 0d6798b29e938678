/**
 * The status object of the control endpoint (docs/devtool.md) and the client that
 * reads it under the one-second response-read budget ("Status degradation").
 */
import { request } from 'node:http';

/** `build` of the status object. */
export interface BuildStatus {
  /** completed builds, failures included; the initial build is generation 1 */
  generation: number;
  /** `ok` / `failed`: the most recent finished build; `building`: one in flight or queued */
  status: 'ok' | 'failed' | 'building';
  /** duration of the most recent finished build, milliseconds */
  duration_ms: number;
  /** bounded tail of the failed build's captured output; null after a success */
  error: string | null;
  /** true while edits arrived during the build in flight (another build will follow) */
  pending: boolean;
}

/** `GET {control_url}/_devtool/status`. */
export interface StatusObject {
  ok: true;
  pid: number;
  url: string;
  started_at: string;
  build: BuildStatus;
}

/** The response-read budget of a control read (docs/devtool.md). */
export const CONTROL_READ_BUDGET_MS = 1000;
/** Connection setup and request write have their own, longer bound. */
const CONNECT_TIMEOUT_MS = 5000;

/**
 * Reads the status object from `{controlUrl}/_devtool/status`; null when it cannot be read: refused
 * connection, no complete response within `budgetMs` after the request was written, a reset
 * after some bytes, a non-200 status or a body that is not the status object.
 */
export function fetchStatus(controlUrl: string, budgetMs = CONTROL_READ_BUDGET_MS): Promise<StatusObject | null> {
  return new Promise((resolve) => {
    let settled = false;
    let budget: NodeJS.Timeout | undefined;
    const done = (v: StatusObject | null): void => {
      if (settled) return;
      settled = true;
      clearTimeout(budget);
      clearTimeout(connectTimer);
      resolve(v);
    };
    const req = request(new URL('/_devtool/status', controlUrl), { method: 'GET', agent: false, headers: { accept: 'application/json' } });
    const connectTimer = setTimeout(() => { req.destroy(); done(null); }, CONNECT_TIMEOUT_MS);
    // the budget starts once the request is written: it covers reading the response only
    req.on('finish', () => {
      clearTimeout(connectTimer);
      budget = setTimeout(() => { req.destroy(); done(null); }, budgetMs);
    });
    req.on('error', () => done(null));
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', () => done(null));
      res.on('aborted', () => done(null));
      res.on('close', () => { if (!res.complete) done(null); });
      res.on('end', () => {
        if (!res.complete || res.statusCode !== 200) return done(null);
        try {
          const v = JSON.parse(Buffer.concat(chunks).toString('utf8')) as StatusObject;
          done(v && v.ok === true && v.build && typeof v.build.generation === 'number' ? v : null);
        } catch {
          done(null);
        }
      });
    });
    req.end();
  });
}
