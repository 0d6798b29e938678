import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { ConfigError, loadLogConfig, loadServeConfig } from '../../../src/config/config.js';

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected a ConfigError');
}

test('defaults', () => {
  const c = loadServeConfig({}, {});
  assert.equal(c.host, '127.0.0.1');
  assert.equal(c.port, 8090);
  assert.equal(c.dataDir, path.resolve('svc_data'));
  assert.equal(c.logFormat, 'text');
  assert.equal(c.logLevel, 'info');
  assert.equal(c.requestLog, true);
  assert.equal(c.insecureCookies, false);
  assert.equal(c.trustProxy, false);
  assert.equal(c.ignoreLock, false);
  assert.deepEqual([...c.features], []);
  assert.deepEqual(c.rateLimit, { max: 10, windowS: 60 });
  assert.deepEqual(c.oauthState, { server: true, ttlS: 600 });
  assert.equal(c.reauthMaxAgeS, 300);
  assert.equal(loadServeConfig({}, { SERVICE_REAUTH_MAX_AGE: '60' }).reauthMaxAgeS, 60);
  assert.equal(c.hashThreads, undefined, 'absent: the hashing pool takes its default');
  assert.equal(loadServeConfig({}, { SERVICE_HASH_THREADS: '3' }).hashThreads, 3);
  assert.equal(c.smtp, undefined);
  assert.equal(c.sendmailCommand, undefined);
});

test('env is read and flags win over env', () => {
  const env = {
    SERVICE_HTTP: '0.0.0.0:9000', SERVICE_DATA_DIR: '/tmp/from-env', SERVICE_LOG_FORMAT: 'json',
    SERVICE_LOG_LEVEL: 'error', SERVICE_LOG_REQUESTS: 'off', SERVICE_TRUST_PROXY: 'yes',
    SERVICE_FEATURES: 'vector', SERVICE_RATE_LIMIT_MAX: '0', SERVICE_RATE_LIMIT_WINDOW: '5',
  };
  const c = loadServeConfig({}, env);
  assert.deepEqual([c.host, c.port, c.dataDir, c.logFormat, c.logLevel, c.requestLog, c.trustProxy],
    ['0.0.0.0', 9000, '/tmp/from-env', 'json', 'err', false, true]);
  assert.deepEqual([...c.features], ['vector']);
  assert.deepEqual(c.rateLimit, { max: 0, windowS: 5 });

  const f = loadServeConfig({
    http: '[::1]:0', 'data-dir': '/tmp/from-flag', 'log-format': 'text', 'log-level': 'debug',
    'trust-proxy': false, features: 'resumable-uploads, fts5-off', 'insecure-cookies': true, 'ignore-lock': true,
  }, env);
  assert.deepEqual([f.host, f.port, f.dataDir, f.logFormat, f.logLevel, f.trustProxy, f.insecureCookies, f.ignoreLock],
    ['::1', 0, '/tmp/from-flag', 'text', 'debug', false, true, true]);
  assert.deepEqual([...f.features].sort(), ['fts5-off', 'resumable-uploads']);
});

test('--no-request-log turns request lines off whatever the env says', () => {
  assert.equal(loadLogConfig({ 'no-request-log': true }, { SERVICE_LOG_REQUESTS: 'true' }).requestLog, false);
  assert.equal(loadLogConfig({ 'request-log': false }, {}).requestLog, false);
  for (const v of ['true', '1', 'YES', 'on']) assert.equal(loadLogConfig({}, { SERVICE_LOG_REQUESTS: v }).requestLog, true);
  for (const v of ['false', '0', 'no', 'Off']) assert.equal(loadLogConfig({}, { SERVICE_LOG_REQUESTS: v }).requestLog, false);
});

test('errors name the variable, the value and what was expected', () => {
  const e = configError(() => loadServeConfig({}, { SERVICE_LOG_FORMAT: 'xml' }));
  assert.equal(e.message, 'invalid SERVICE_LOG_FORMAT "xml": expected one of text, json');
  assert.deepEqual([e.variable, e.value, e.expected], ['SERVICE_LOG_FORMAT', 'xml', 'one of text, json']);

  assert.equal(configError(() => loadLogConfig({ 'log-level': 'loud' }, {})).variable, '--log-level');
  assert.equal(configError(() => loadLogConfig({}, { SERVICE_LOG_REQUESTS: 'maybe' })).variable, 'SERVICE_LOG_REQUESTS');
  const cases: Array<[Record<string, string>, string]> = [
    [{ SERVICE_HTTP: 'localhost' }, 'SERVICE_HTTP'],
    [{ SERVICE_HTTP: ':8090' }, 'SERVICE_HTTP'],
    [{ SERVICE_HTTP: '127.0.0.1:65536' }, 'SERVICE_HTTP'],
    [{ SERVICE_HTTP: '127.0.0.1:-1' }, 'SERVICE_HTTP'],
    [{ SERVICE_HTTP: '[::1:80' }, 'SERVICE_HTTP'],
    [{ SERVICE_FEATURES: 'vector,warp-drive' }, 'SERVICE_FEATURES'],
    [{ SERVICE_RATE_LIMIT_MAX: '-1' }, 'SERVICE_RATE_LIMIT_MAX'],
    [{ SERVICE_RATE_LIMIT_MAX: '2.5' }, 'SERVICE_RATE_LIMIT_MAX'],
    [{ SERVICE_RATE_LIMIT_WINDOW: '0' }, 'SERVICE_RATE_LIMIT_WINDOW'],
    [{ SERVICE_TRUST_PROXY: 'sure' }, 'SERVICE_TRUST_PROXY'],
    [{ SERVICE_REAUTH_MAX_AGE: '0' }, 'SERVICE_REAUTH_MAX_AGE'],
    [{ SERVICE_HASH_THREADS: '0' }, 'SERVICE_HASH_THREADS'],
    [{ SERVICE_HASH_THREADS: 'many' }, 'SERVICE_HASH_THREADS'],
    [{ SERVICE_SMTP_HOST: 'mx', SERVICE_SMTP_PORT: '0' }, 'SERVICE_SMTP_PORT'],
    [{ SERVICE_SMTP_HOST: 'mx', SERVICE_SMTP_TRANSPORT: 'carrier-pigeon' }, 'SERVICE_SMTP_TRANSPORT'],
  ];
  for (const [env, variable] of cases) {
    const err = configError(() => loadServeConfig({}, env));
    assert.equal(err.variable, variable, JSON.stringify(env));
    assert.ok(err.message.startsWith(`invalid ${variable} "`), err.message);
  }
  assert.equal(configError(() => loadServeConfig({ http: 'nope' }, {})).variable, '--http');
});

test('an empty env var counts as unset', () => {
  const c = loadServeConfig({}, { SERVICE_LOG_FORMAT: '', SERVICE_HTTP: '' });
  assert.equal(c.logFormat, 'text');
  assert.equal(c.port, 8090);
});

test('mail settings', () => {
  const c = loadServeConfig({}, {
    SERVICE_SMTP_HOST: 'smtp.example.com', SERVICE_SMTP_TRANSPORT: 'implicit', SERVICE_SMTP_USERNAME: 'u',
    SERVICE_SMTP_PASSWORD: 'p', SERVICE_SMTP_FROM: 'noreply@example.com', SERVICE_SENDMAIL_COMMAND: ' /usr/sbin/sendmail -t ',
  });
  assert.deepEqual(c.smtp, { host: 'smtp.example.com', port: 465, transport: 'implicit', username: 'u', password: 'p', from: 'noreply@example.com' });
  assert.equal(c.sendmailCommand, '/usr/sbin/sendmail -t');
  assert.equal(loadServeConfig({}, { SERVICE_SMTP_HOST: 'mx' }).smtp?.port, 587);
});

test('SERVICE_METRICS_TOKEN: kept when long enough, refused (and not echoed) when short or spaced', () => {
  assert.equal(loadServeConfig({}, {}).metricsToken, undefined);
  assert.equal(loadServeConfig({}, { SERVICE_METRICS_TOKEN: '' }).metricsToken, undefined);
  assert.equal(loadServeConfig({}, { SERVICE_METRICS_TOKEN: 'a'.repeat(16) }).metricsToken, 'a'.repeat(16));
  for (const bad of ['short', 'sixteen chars ok!']) {
    const err = configError(() => loadServeConfig({}, { SERVICE_METRICS_TOKEN: bad }));
    assert.equal(err.variable, 'SERVICE_METRICS_TOKEN');
    assert.ok(!err.message.includes(bad));
  }
});
