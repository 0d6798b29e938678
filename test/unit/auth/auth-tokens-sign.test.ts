/**
 * Auth token signing (src/auth/tokens.ts): tokens signed with node:crypto are standard HS256
 * JWTs that jose verifies with the derived key, carry iat/exp TOKEN_TTL_S apart, and fail
 * verification when tampered with, signed under another token key, or expired.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import { jwtVerify, decodeProtectedHeader } from 'jose';
import { TOKEN_TTL_S, TokenService } from '../../../src/auth/tokens.js';
import { tamperBase64url } from '../../helpers/tamper.js';

const secret = randomBytes(32);
const tokens = new TokenService(secret);
const derived = (tokenKey: string) => createHmac('sha256', secret).update(tokenKey).digest();

test('issued tokens are HS256 JWTs jose verifies, with the claims and a TTL', async () => {
  const { token, csrf } = await tokens.issue('pbc_users', 'abcdefghijklmno', 'key-1', 3, 'sess1');
  assert.deepEqual(decodeProtectedHeader(token), { alg: 'HS256', typ: 'JWT' });
  const { payload } = await jwtVerify(token, derived('key-1'), { algorithms: ['HS256'] });
  assert.equal(payload.id, 'abcdefghijklmno');
  assert.equal(payload.collectionId, 'pbc_users');
  assert.equal(payload.type, 'auth');
  assert.equal(payload.ep, 3);
  assert.equal(payload.sid, 'sess1');
  assert.equal(payload.csrf, csrf);
  assert.equal((payload.exp as number) - (payload.iat as number), TOKEN_TTL_S);
  assert.ok(Math.abs((payload.iat as number) - Date.now() / 1000) < 5);
  const claims = await tokens.verify(token, 'key-1');
  assert.equal(claims?.id, 'abcdefghijklmno');
  assert.equal(claims?.sid, 'sess1');
  assert.equal(claims?.authTime, undefined, 'no sign-in time given: none claimed');
  assert.equal(payload.auth_time, undefined);
});

test('the sign-in time travels as the auth_time claim (epoch seconds)', async () => {
  const { token } = await tokens.issue('pbc_users', 'abcdefghijklmno', 'key-1', 3, undefined, true, 1_700_000_000);
  const { payload } = await jwtVerify(token, derived('key-1'), { algorithms: ['HS256'] });
  assert.equal(payload.auth_time, 1_700_000_000);
  const claims = await tokens.verify(token, 'key-1');
  assert.equal(claims?.authTime, 1_700_000_000);
  assert.equal(claims?.mf, true);
});

test('tampered, foreign-key and expired tokens do not verify', async () => {
  const { token } = await tokens.issue('pbc_users', 'abcdefghijklmno', 'key-2', 0);
  assert.equal(await new TokenService(secret).verify(token, 'other-key'), null);
  const [h, p, s] = token.split('.');
  const forged = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(p, 'base64url').toString()), id: 'zzzzzzzzzzzzzzz' })).toString('base64url');
  assert.equal(await new TokenService(secret).verify(`${h}.${forged}.${s}`, 'key-2'), null);
  assert.equal(await new TokenService(secret).verify(`${h}.${p}.${tamperBase64url(s)}`, 'key-2'), null);
  const none = Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url');
  assert.equal(await new TokenService(secret).verify(`${none}.${p}.`, 'key-2'), null);
  // an expired token signed the same way
  const past = Math.floor(Date.now() / 1000) - 10;
  const body = `${h}.${Buffer.from(JSON.stringify({ id: 'abcdefghijklmno', collectionId: 'pbc_users', type: 'auth', ep: 0, csrf: 'x', iat: past - 100, exp: past })).toString('base64url')}`;
  const expired = `${body}.${createHmac('sha256', derived('key-2')).update(body).digest('base64url')}`;
  assert.equal(await new TokenService(secret).verify(expired, 'key-2'), null);
});
