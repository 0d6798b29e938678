/**
 * isLoopback (src/api/install.ts): which client addresses the install link accepts by default.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { INSTALL_TOKEN_TTL_MS, isLoopback, newInstallState } from '../../../src/api/install.js';

test('loopback addresses: IPv4 127/8, ::1 and IPv4-mapped 127/8', () => {
  for (const a of ['127.0.0.1', '127.1.2.3', '::1', '::ffff:127.0.0.1', ' 127.0.0.1 ']) assert.equal(isLoopback(a), true, a);
  for (const a of ['10.0.0.1', '203.0.113.9', '::ffff:10.0.0.1', 'fe80::1', '', '127.0.0.1.evil', '1127.0.0.1']) assert.equal(isLoopback(a), false, a);
});

test('an install state holds a fresh token for 30 minutes', () => {
  const a = newInstallState(1000);
  const b = newInstallState(1000);
  assert.equal(a.expiresAt, 1000 + INSTALL_TOKEN_TTL_MS);
  assert.equal(INSTALL_TOKEN_TTL_MS, 30 * 60_000);
  assert.match(a.token!, /^[\w-]{32}$/);
  assert.notEqual(a.token, b.token);
});
