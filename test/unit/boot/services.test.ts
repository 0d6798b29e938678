/**
 * The composition root (src/boot/services.ts, ARCHITECTURE.md "Folders": `src/boot/`): the route
 * context comes out whole, every member present, with or without an app definition, and the
 * app's parts reach the services through their constructors.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { loadServeConfig } from '../../../src/config/config.js';
import { createLogger } from '../../../src/log/logger.js';
import { openDataDir } from '../../../src/boot/open-data.js';
import { buildServices, type Services } from '../../../src/boot/services.js';
import { defineApp, type AppDefinition } from '../../../src/app/definition.js';
import type { AppHandle } from '../../../src/app/runtime.js';
import { BUILT_IN_METHOD_SLUGS } from '../../../src/auth/method-registry.js';

const logger = createLogger({ format: 'text', level: 'error', requests: false });

/** Runs `fn` over the services of a fresh data directory (`features`: SERVICE_FEATURES). */
async function withServices(app: AppDefinition<AppHandle> | null, features: string, fn: (s: Services) => void | Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-boot-'));
  const config = loadServeConfig({ 'data-dir': dir }, features ? { SERVICE_FEATURES: features } : {});
  const data = await openDataDir(config, logger, 0);
  const services = await buildServices(config, logger, data, app, null);
  try {
    await fn(services);
  } finally {
    await services.close();
    await data.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

test('buildServices without an app: an empty runtime, no mail group, no outbox, the built-in sign-in methods only', async () => {
  await withServices(null, '', ({ ctx }) => {
    assert.deepEqual(ctx.app.routes(ctx.auth), []);
    assert.equal(ctx.app.hasAuthHook('beforeRefresh'), false);
    assert.equal(ctx.mailGroup, null);
    assert.equal(ctx.outbox, null);
    assert.equal(ctx.auth.tenancy, null);
    assert.deepEqual([...ctx.auth.methods.keys()].sort(), [...BUILT_IN_METHOD_SLUGS].sort());
    assert.deepEqual(ctx.features.list(), []);
    assert.equal(ctx.app.handle.mail.outbox, undefined);
  });
});

test('buildServices with an app: its mail group, tenancy, custom method and hooks reach the services at construction', async () => {
  const app = defineApp({
    mail: { check_suppression: true },
    tenancy: { resolve: () => ({ role: 'member' }) },
    authMethods: [{ slug: 'badge', complete: () => 'nobody' }],
    hooks: { auth: { beforeRefresh: () => {} } },
    flags: [{ name: 'beta', default: true }],
  }) as AppDefinition<AppHandle>;
  await withServices(app, 'dev-tools', ({ ctx }) => {
    assert.equal(ctx.mailGroup, app.mail);
    assert.notEqual(ctx.outbox, null, 'dev-tools: the test outbox');
    assert.equal(ctx.app.handle.mail.outbox, ctx.outbox);
    assert.notEqual(ctx.auth.tenancy, null);
    assert.ok(ctx.auth.methods.get('badge'), 'the custom method is registered after the built-ins');
    assert.equal(ctx.app.hasAuthHook('beforeRefresh'), true);
    assert.equal(ctx.app.hasAuthHook('afterRefresh'), false);
    assert.equal(ctx.features.flag('beta'), true);
  });
});

test('the services tell subscribers of override changes and stop when unsubscribed', async () => {
  await withServices(defineApp({ flags: [{ name: 'beta', default: false }] }) as AppDefinition<AppHandle>, '', async ({ ctx }) => {
    let told = 0;
    const stop = ctx.features.subscribeOverrideChanges(() => told++);
    await ctx.features.put('flag:beta', 'true');
    assert.equal(told, 1);
    assert.equal(ctx.features.flag('beta'), true);
    stop();
    await ctx.features.put('flag:beta', 'false');
    assert.equal(told, 1);
  });
});
