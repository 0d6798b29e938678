/**
 * Unit: auth classes over small fakes of their narrow repositories (src/context/auth-repositories.ts),
 * no database: AuthTokens (issue, find, redeem; docs/api.md "Verification and password reset")
 * and SessionStore (sign out everywhere in one job that announces the ended sessions, the ended
 * listeners fed by the change feed).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AuthTokens } from '../../../src/auth/auth-tokens.js';
import { SessionStore } from '../../../src/auth/sessions.js';
import type { AuthTokenRepository, SessionRepository } from '../../../src/context/auth-repositories.js';
import type { AuthTokenRow } from '../../../src/store/auth-store.js';
import type { ChangeBatch, ChangeListener } from '../../../src/store/change-feed.js';
import { SESSIONS_FEED_ID } from '../../../src/store/change-feed.js';
import type { WriteStep } from '../../../src/store/write-job.js';
import type { Collection } from '../../../src/model/schema.js';

const users = { id: 'c_users', name: 'users', type: 'auth', system: false, fields: [], options: {} } as unknown as Collection;
const step = (sql: string, ...params: (string | number)[]): WriteStep => ({ sql, params });

/** `_authTokens` in a Map: issueSteps keeps the row, the step SQL names what a step does. */
function fakeTokens() {
  const rows = new Map<string, AuthTokenRow>();
  const written: WriteStep[][] = [];
  const repo: AuthTokenRepository = {
    authTokens: {
      issueSteps(row) {
        rows.set(row.id, row);
        return [step('issue', row.id)];
      },
      async find(selector, kind, collectionId) {
        const r = rows.get(selector);
        return r && r.kind === kind && r.collectionId === collectionId ? r : undefined;
      },
      consumeStep: (selector) => step('consume', selector),
      dropAllSteps: (kind, collectionId, recordId) => [step('drop', kind, collectionId, recordId)],
      latest: async () => undefined,
    },
    async write(steps) {
      written.push(steps);
      return steps.map(() => ({ changes: 1 }));
    },
  };
  return { repo, rows, written };
}

test('AuthTokens: an issued token is found by its own kind and collection only', async () => {
  const { repo, rows, written } = fakeTokens();
  const tokens = new AuthTokens(repo);
  const token = await tokens.issue('verify', users, 'r1', 'a@example.com');
  assert.equal(written.length, 1);
  const [selector, verifier] = token.split('.');
  const row = rows.get(selector);
  assert.ok(row && verifier);
  assert.notEqual(row.hash, verifier, 'only the verifier hash is stored');
  assert.deepEqual(await tokens.find('verify', users, token), { selector, recordId: 'r1', email: 'a@example.com' });
  assert.equal(await tokens.find('reset', users, token), null);
  assert.equal(await tokens.find('verify', { ...users, id: 'c_other' } as Collection, token), null);
  assert.equal(await tokens.find('verify', users, `${selector}.wrong`), null);
  assert.equal(await tokens.find('verify', users, 42), null);
});

test('AuthTokens: an expired token is not found; redeeming and dropping are the repository steps', async () => {
  const { repo, rows } = fakeTokens();
  const tokens = new AuthTokens(repo);
  const token = await tokens.issue('reset', users, 'r1', 'a@example.com', 60);
  const [selector] = token.split('.');
  const found = await tokens.find('reset', users, token);
  assert.ok(found);
  assert.deepEqual(tokens.consumeStep(found, { status: 400, code: 'validation_failed', message: 'x' }), step('consume', selector));
  assert.deepEqual(tokens.dropAllSteps('reset', users, 'r1'), [step('drop', 'reset', 'c_users', 'r1')]);
  rows.get(selector)!.expires = Date.now() - 1;
  assert.equal(await tokens.find('reset', users, token), null);
});

/** `_sessions` statements that name themselves, a writer that keeps its jobs, a feed to publish on. */
function fakeSessions() {
  const written: WriteStep[][] = [];
  const listeners = new Set<ChangeListener>();
  const repo: SessionRepository = {
    sessions: {
      createSteps: (collectionId, recordId) => [step('create', collectionId, recordId)],
      lastSeen: async () => undefined,
      touchStep: (sid) => step('touch', sid),
      list: async () => [],
      revokeStep: (collectionId, recordId, sid) => step('revoke', collectionId, recordId, sid),
      wipeSteps: (collectionId, recordId) => [step('wipe', collectionId, recordId)],
    },
    auth: { bumpEpochStep: (c, recordId) => step('bump', c.id, recordId) },
    changes: {
      subscribe(listener) {
        listeners.add(listener);
        return () => void listeners.delete(listener);
      },
    },
    async write(steps) {
      written.push(steps);
      return steps.map(() => ({ changes: 1 }));
    },
  };
  const publish = (batch: ChangeBatch) => {
    for (const l of listeners) void l(batch);
  };
  return { repo, written, listeners, publish };
}

test('SessionStore: endAll bumps the epoch and wipes the rows in one job announcing the ended sessions', async () => {
  const { repo, written } = fakeSessions();
  const sessions = new SessionStore(repo);
  await sessions.endAll(users, 'r1');
  assert.equal(written.length, 1);
  const [bump, wipe] = written[0];
  assert.equal(bump.sql, 'bump');
  assert.equal(wipe.sql, 'wipe');
  assert.deepEqual(wipe.creates, { collection: SESSIONS_FEED_ID, id: JSON.stringify(['c_users', 'r1']) });
  sessions.close();
});

test('SessionStore: ended listeners hear the announced records from the feed until close', () => {
  const { repo, listeners, publish } = fakeSessions();
  const sessions = new SessionStore(repo);
  const heard: string[][] = [];
  sessions.subscribeEnded((cid, rid) => heard.push([cid, rid]));
  publish({ commit: 1, truncated: [], changes: [
    { collection: SESSIONS_FEED_ID, id: JSON.stringify(['c_users', 'r1']), op: 'create' },
    { collection: 'c_users', id: 'r2', op: 'update' },
    { collection: SESSIONS_FEED_ID, id: 'not json', op: 'create' },
  ] });
  assert.deepEqual(heard, [['c_users', 'r1']]);
  sessions.close();
  assert.equal(listeners.size, 0);
});
