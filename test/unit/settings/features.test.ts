/**
 * FeatureService over a fake SettingsRepository (src/settings/features.ts; docs/api.md,
 * "Settings, flags and experiments"): the service takes only the settings statements, the
 * writer, the change feed and the reader's snapshot end, so an in-memory `_settings` and a feed
 * that delivers each write before answering it (as the writer does) stand in for the database.
 * The real tables are covered by test/e2e/features.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FeatureService, type SettingsRepository } from '../../../src/settings/features.js';
import { SETTINGS_FEED_ID, type ChangeBatch, type ChangeListener } from '../../../src/store/change-feed.js';
import type { SettingsRowStore } from '../../../src/store/settings-store.js';
import type { Setting } from '../../../src/model/setting.js';

/** `_settings` in memory; each put step is `{ sql: 'put', params: [key, value, now] }`. */
function fakeRepo(initial: Setting[]) {
  const table = new Map(initial.map((s) => [s.key, s]));
  const listeners: ChangeListener[] = [];
  let snapshotsEnded = 0;
  const emit = async (batch: ChangeBatch) => {
    for (const l of listeners) await l(batch);
  };
  const rows: Partial<SettingsRowStore> = {
    all: async () => [...table.values()],
    get: async (key) => table.get(key),
    putStep: (key, value, now) => ({ sql: 'put', params: [key, value, now] }),
  };
  const repo: SettingsRepository = {
    rows: rows as SettingsRowStore,
    write: async (steps) => {
      const keys = steps.map(({ params: [key, value, now] }) => {
        const k = String(key);
        table.set(k, { key: k, value: String(value), created: table.get(k)?.created ?? String(now), updated: String(now) });
        return k;
      });
      // the writer delivers the commit on the feed before the job is answered
      await emit({ commit: 1, changes: keys.map((id) => ({ collection: SETTINGS_FEED_ID, id, op: 'create' })), truncated: [] });
      return steps.map(() => ({ changes: 1 }));
    },
    changes: {
      subscribe: (l) => {
        listeners.push(l);
        return () => void listeners.splice(listeners.indexOf(l), 1);
      },
    },
    endSnapshot: () => void snapshotsEnded++,
  };
  return { repo, table, emit, snapshots: () => snapshotsEnded, listeners };
}

const row = (key: string, value: string): Setting => ({ key, value, created: 'c', updated: 'u' });

test('open reads every setting; a put is in the mirror once answered and moves the flag', async () => {
  const fake = fakeRepo([row('site', 'svc')]);
  const features = await FeatureService.open(fake.repo, [{ name: 'beta', default: false }]);
  assert.equal(features.get('site')?.value, 'svc');
  assert.equal(features.flag('beta'), false);
  let told = 0;
  features.subscribeOverrideChanges(() => told++);
  await features.put('flag:beta', 'true');
  assert.equal(features.get('flag:beta')?.value, 'true');
  assert.equal(features.flag('beta'), true);
  assert.equal(told, 1);
  features.close();
  assert.equal(fake.listeners.length, 0);
});

test('a commit of another instance naming a setting ends the snapshot and reloads that key', async () => {
  const fake = fakeRepo([row('site', 'svc')]);
  const features = await FeatureService.open(fake.repo);
  fake.table.set('site', row('site', 'renamed'));
  await fake.emit({ commit: 2, changes: [{ collection: SETTINGS_FEED_ID, id: 'site', op: 'create' }], truncated: [] });
  assert.equal(features.get('site')?.value, 'renamed');
  assert.equal(fake.snapshots(), 1);
  // a truncated _settings reloads them all
  fake.table.set('other', row('other', 'x'));
  await fake.emit({ commit: 3, changes: [], truncated: [SETTINGS_FEED_ID] });
  assert.deepEqual(features.list().map((s) => s.key), ['other', 'site']);
  features.close();
});
