/**
 * A throw-away nginx load balancer for tests (two `svc` instances behind a real load
 * balancer from Debian): Debian's nginx binary (on PATH or /usr/sbin/nginx), a config written
 * into a fresh temp directory, run in the foreground (`daemon off`) on a free loopback port in
 * front of the given upstream servers, and removed by `stop()`.
 *
 * Everything nginx writes lives in that directory: the pid file, the error and access logs and
 * every temp path (request bodies, proxied responses, FastCGI/uWSGI/SCGI), so it needs no root
 * and never touches /var or /etc/nginx. The proxy is set up the way a deployment in front of
 * `svc` would be: HTTP/1.1 with keep-alive to the upstreams, WebSocket upgrades passed through,
 * no response buffering or caching (Server-Sent Events stream as written, for up to an hour), no
 * request body size limit, and Host / X-Forwarded-For / X-Forwarded-Proto / X-Real-IP set.
 *
 * As root (CI containers) the workers would drop to `nobody`, which cannot read or write the
 * 0700 temp directory (request bodies over the in-memory buffer go to a file there): the config
 * then says `user root root;` so the workers stay root.
 *
 * `nginxSkipReason()` says why nginx cannot start here, for `t.skip(reason)`; .ci/run installs
 * the `nginx` package (`bash ci/install-apt.sh nginx nginx`). Debian's package would start a
 * system nginx on port 80 at install time where services may start; this helper never uses it.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { accessSync, constants, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { freePort } from './proc.js';

/** A running nginx in front of some upstream servers. */
export interface Nginx {
  /** `http://127.0.0.1:<port>` (no trailing slash) */
  url: string;
  port: number;
  /**
   * The error log so far (proxy errors, start and stop notices), followed by whatever nginx wrote
   * on stderr (messages from before its config was read), for failure messages. Still readable
   * after stop().
   */
  logs(): string;
  /**
   * Stops nginx (SIGQUIT: graceful, open connections get at most 1 s; SIGKILL to the whole
   * process group after 3 s), waits for the master to exit and removes the directory. Safe to
   * call twice.
   */
  stop(): Promise<void>;
}

/** Options of `startNginx`. */
export interface NginxOptions {
  /** How requests are spread over the upstreams; only nginx's default round robin for now. */
  balance?: 'round_robin';
}

/**
 * The path that answers 204 from nginx itself (never proxied): `startNginx` polls it to know
 * nginx is up. Named so that no application route can collide with it.
 */
const READY_PATH = '/__svc_test_nginx_ready';

/** Where the first usable nginx binary is (PATH, then /usr/sbin/nginx), or null. */
function nginxBinary(): string | null {
  const candidates = (process.env.PATH ?? '').split(delimiter).filter(Boolean).map((d) => join(d, 'nginx'));
  // Debian installs it in /usr/sbin, which is not on a non-root user's PATH.
  candidates.push('/usr/sbin/nginx');
  for (const file of candidates) {
    try {
      if (!statSync(file).isFile()) continue;
      accessSync(file, constants.X_OK);
      return file;
    } catch { /* not there or not executable */ }
  }
  return null;
}

/** `nginxBinary()` checked once by running `nginx -v`: undefined until the first call. */
let usable: { bin: string } | { reason: string } | undefined;

function probe(): { bin: string } | { reason: string } {
  if (usable) return usable;
  const bin = nginxBinary();
  if (!bin) {
    usable = { reason: 'nginx is not installed (Debian package nginx; ci/install-apt.sh installs it: `bash ci/install-apt.sh nginx nginx`)' };
  } else {
    // `nginx -v` prints its version on stderr and exits 0; anything else (a broken install, a
    // missing library) means it cannot run here.
    const v = spawnSync(bin, ['-v'], { encoding: 'utf8', timeout: 10_000 });
    usable = v.status === 0 ? { bin } : { reason: `${bin} does not run (nginx -v: ${v.error?.message ?? `exit ${v.status}`} ${(v.stderr ?? '').trim()})` };
  }
  return usable;
}

/** Why nginx cannot start on this machine, or null when it can. */
export function nginxSkipReason(): string | null {
  const p = probe();
  return 'reason' in p ? p.reason : null;
}

const isRoot = (): boolean => typeof process.getuid === 'function' && process.getuid() === 0;


/** A path as an nginx string literal (double-quoted; temp dirs have no quotes, but be safe). */
const quote = (s: string): string => `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;

/** The nginx.conf for `upstreams` behind `127.0.0.1:<port>`, everything under `dir`. */
function config(dir: string, port: number, upstreams: string[]): string {
  const p = (name: string): string => quote(join(dir, name));
  return `# written by test/helpers/nginx.ts
${isRoot() ? '# master runs as root: keep the workers root too, the temp dir is 0700\nuser root root;\n' : ''}worker_processes 1;
pid ${p('nginx.pid')};
error_log ${p('error.log')} notice;
# long-lived connections (SSE, WebSocket) must not hold up a graceful stop for long
worker_shutdown_timeout 1s;

events {
  worker_connections 1024;
}

http {
  access_log ${p('access.log')};
  default_type application/octet-stream;
  client_body_temp_path ${p('client_body_temp')};
  proxy_temp_path ${p('proxy_temp')};
  fastcgi_temp_path ${p('fastcgi_temp')};
  uwsgi_temp_path ${p('uwsgi_temp')};
  scgi_temp_path ${p('scgi_temp')};

  # WebSocket: pass "Connection: upgrade" on when the client asks for an upgrade; otherwise send
  # no Connection header, so that the upstream connections stay open (keepalive below).
  map $http_upgrade $connection_upgrade {
    default upgrade;
    ''      '';
  }

  # round robin (nginx's default) over the instances
  upstream svc_backends {
${upstreams.map((u) => `    server ${u};`).join('\n')}
    keepalive 16;
  }

  server {
    listen 127.0.0.1:${port};
    # uploads of any size reach the upstream
    client_max_body_size 0;

    # readiness probe of startNginx(), answered by nginx itself
    location = ${READY_PATH} {
      access_log off;
      return 204;
    }

    location / {
      proxy_pass http://svc_backends;
      proxy_http_version 1.1;
      proxy_set_header Upgrade $http_upgrade;
      proxy_set_header Connection $connection_upgrade;
      # $http_host keeps the client's port (svc builds absolute URLs from Host)
      proxy_set_header Host $http_host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto $scheme;
      proxy_set_header X-Real-IP $remote_addr;
      # Server-Sent Events: every chunk goes to the client as the upstream writes it, and an
      # idle stream (or WebSocket) is not cut after nginx's default 60 s
      proxy_buffering off;
      proxy_cache off;
      proxy_read_timeout 1h;
      proxy_send_timeout 1h;
    }
  }
}
`;
}

/** GET READY_PATH once: true on 204, false on any error or other answer. */
function ready(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: READY_PATH, agent: false, timeout: 1_000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 204);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
    req.end();
  });
}

/**
 * Starts nginx as a load balancer in front of `upstreams` and waits until it answers (at most
 * 10 s).
 * @param upstreams `host:port` of each backend, e.g. `['127.0.0.1:8091', '127.0.0.1:8092']`;
 *   they need not be up yet (nginx only connects on a proxied request)
 * @throws Error with nginx's reason when it is not usable here (see nginxSkipReason), when
 *   `upstreams` is empty, or, with the error log and nginx's output, when nginx exits while
 *   starting (a bad config, the port taken meanwhile) or does not answer within 10 s
 */
export async function startNginx(upstreams: string[], opts: NginxOptions = {}): Promise<Nginx> {
  const p = probe();
  if ('reason' in p) throw new Error(p.reason);
  if (upstreams.length === 0) throw new Error('startNginx: no upstreams');
  if ((opts.balance ?? 'round_robin') !== 'round_robin') throw new Error(`startNginx: unknown balance ${String(opts.balance)}`);
  const dir = mkdtempSync(join(tmpdir(), 'svc-nginx-'));
  const conf = join(dir, 'nginx.conf');
  const errorLog = join(dir, 'error.log');
  const port = await freePort();
  writeFileSync(conf, config(dir, port, upstreams));
  // -p: the prefix (relative paths, none here). Messages from before the config is read go to
  // the compiled-in log, stderr in Debian's build (collected below; `-e` would need nginx
  // 1.19.5, newer than Debian 11's). detached: nginx gets its own process group, so that a
  // SIGKILL reaches the workers too (they outlive a killed master otherwise).
  const child: ChildProcess = spawn(p.bin, ['-p', dir, '-c', conf, '-g', 'daemon off;'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  const collect = (d: Buffer): void => { output = (output + d.toString('utf8')).slice(-32_768); };
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  let spawnError: Error | null = null;
  child.on('error', (err) => { spawnError = err; });
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.once('error', () => resolve());
  });
  const running = (): boolean => child.exitCode === null && child.signalCode === null && !spawnError;
  const killGroup = (signal: NodeJS.Signals): void => {
    if (!child.pid) return;
    try {
      process.kill(-child.pid, signal);
    } catch { /* already gone */ }
  };
  // A test process that exits without stop() (a crash, an assertion in `before`) must not leave
  // nginx running.
  const onExit = (): void => killGroup('SIGKILL');
  process.once('exit', onExit);

  let lastLog = '';
  const logs = (): string => {
    if (existsSync(errorLog)) {
      try {
        lastLog = readFileSync(errorLog, 'utf8');
      } catch { /* keep the last copy */ }
    }
    return output ? `${lastLog}${lastLog && !lastLog.endsWith('\n') ? '\n' : ''}${output}` : lastLog;
  };

  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    if (running() && child.pid) {
      // SIGQUIT is nginx's graceful shutdown (worker_shutdown_timeout bounds it to ~1 s)
      try {
        process.kill(child.pid, 'SIGQUIT');
      } catch { /* already gone */ }
      const timer = setTimeout(() => killGroup('SIGKILL'), 3_000);
      await exited;
      clearTimeout(timer);
    }
    // a worker left behind by a master that died some other way
    killGroup('SIGKILL');
    process.removeListener('exit', onExit);
    logs(); // keep the error log readable after the directory is gone
    rmSync(dir, { recursive: true, force: true });
  };

  const deadline = Date.now() + 10_000;
  for (;;) {
    if (!running()) {
      await stop();
      throw new Error(`nginx exited while starting (${spawnError ? (spawnError as Error).message : `exit ${child.exitCode ?? child.signalCode}`}): ${logs()}`);
    }
    if (await ready(port)) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`nginx did not answer on 127.0.0.1:${port} within 10 s: ${logs()}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return { url: `http://127.0.0.1:${port}`, port, logs, stop };
}
