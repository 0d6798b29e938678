/**
 * In-process app harness for unit tests: the real server (src/server.ts startServer) in the test's
 * own process, on a free port with a temporary data directory, with its services reachable
 * (`app.context`: the store, its change feed, the record and auth services) beside real HTTP.
 * The writer thread runs the built worker (dist/workers), so `npm run build` must have run.
 *
 *   const app = await startApp();
 *   const r = await app.api('GET', '/api/health');
 *   app.context.store.writer.changes.subscribe(…);
 *   await app.stop();
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer, type RunningServer } from '../../src/server.js';
import { loadServeConfig } from '../../src/config/config.js';
import { createLogger } from '../../src/log/logger.js';
import { upsertSuperuser } from '../../src/auth/superuser-admin.js';
import { SU_EMAIL, SU_PASSWORD, type ApiResponse } from './server.js';

export interface App {
  url: string;
  dataDir: string;
  context: RunningServer['context'];
  /** the server's log lines so far (JSON) */
  logs: string[];
  /** superuser bearer token */
  suToken: string;
  api(method: string, path: string, opts?: { body?: unknown; token?: string | null }): Promise<ApiResponse>;
  stop(): Promise<void>;
}

export async function startApp(flags: Record<string, string | boolean> = {}, env: NodeJS.ProcessEnv = {}): Promise<App> {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-app-'));
  await upsertSuperuser(dataDir, SU_EMAIL, SU_PASSWORD);
  const logs: string[] = [];
  const config = loadServeConfig({ http: '127.0.0.1:0', 'data-dir': dataDir, 'insecure-cookies': true, ...flags }, env);
  const logger = createLogger({ format: 'json', level: 'debug', requests: true, write: (line) => logs.push(line) });
  const server = await startServer(config, logger);
  const url = `http://${server.address}`;
  const api: App['api'] = async (method, path, o = {}) => {
    const headers: Record<string, string> = {};
    if (o.token) headers.authorization = `Bearer ${o.token}`;
    if (o.body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(url + path, { method, headers, body: o.body === undefined ? undefined : JSON.stringify(o.body) });
    const text = await res.text();
    let body: any = null;
    try {
      body = text ? JSON.parse(text) : null;
    } catch {
      body = null;
    }
    return { status: res.status, headers: res.headers, body, text };
  };
  const login = await api('POST', '/api/collections/_superusers/auth-with-password', { body: { identity: SU_EMAIL, password: SU_PASSWORD } });
  if (login.status !== 200) throw new Error(`superuser login failed: ${login.text}`);
  return {
    url, dataDir, context: server.context, logs, suToken: login.body.token, api,
    async stop() {
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
