/**
 * OAuth2 provider kinds (0-conventions.md "Sign-in method options"): the profile each
 * named kind's userinfo answer maps to (the end-to-end test runs the OpenID Connect shape against
 * a real provider; GitHub's and Discord's shapes are checked here), who vouches for an email, and
 * the provider option checks.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isHttpsUrl, mapProfile, providerEndpoints, providerOptionErrors, providerScopes } from '../../../src/auth/methods/oauth2-providers.js';

test('OpenID Connect kinds: sub, email, email_verified (boolean or "true"), name, picture', () => {
  const p = mapProfile('google', { sub: '123', email: 'a@example.com', email_verified: true, name: 'Ann', picture: 'https://x/p.png' });
  assert.deepEqual({ ...p, raw: undefined }, { id: '123', email: 'a@example.com', emailVerified: true, name: 'Ann', avatarURL: 'https://x/p.png', raw: undefined });
  assert.equal(mapProfile('generic', { sub: '1', email: 'a@b.c', email_verified: 'true' }).emailVerified, true);
  assert.equal(mapProfile('generic', { sub: '1', email: 'a@b.c', email_verified: 'false' }).emailVerified, false);
  // Microsoft work accounts send no email_verified: the address is not vouched for
  assert.equal(mapProfile('microsoft', { sub: 'm', email: 'boss@corp.example' }).emailVerified, false);
});

test('GitHub: numeric id, login as the fallback name, the public email unverified (the emails endpoint decides)', () => {
  const p = mapProfile('github', { id: 4242, login: 'octo', name: null, email: 'o@example.com', avatar_url: 'https://a/x' });
  assert.equal(p.id, '4242');
  assert.equal(p.name, 'octo');
  assert.equal(p.email, 'o@example.com');
  assert.equal(p.emailVerified, false);
  assert.equal(p.avatarURL, 'https://a/x');
});

test('Discord: id, global_name over username, verified, the CDN avatar URL', () => {
  const p = mapProfile('discord', { id: '80351110224678912', username: 'nelly', global_name: 'Nelly', email: 'n@example.com', verified: true, avatar: 'abc' });
  assert.equal(p.id, '80351110224678912');
  assert.equal(p.name, 'Nelly');
  assert.equal(p.emailVerified, true);
  assert.equal(p.avatarURL, 'https://cdn.discordapp.com/avatars/80351110224678912/abc.png');
  assert.equal(mapProfile('discord', { id: '1', username: 'x' }).avatarURL, '');
});

test('named kinds have built-in https endpoints and scopes; overrides win', async () => {
  for (const kind of ['google', 'github', 'microsoft', 'discord'] as const) {
    const e = await providerEndpoints({ name: kind, kind, clientId: 'c', redirectUrls: ['https://app/cb'] });
    for (const u of [e.authUrl, e.tokenUrl, e.userInfoUrl]) assert.ok(isHttpsUrl(u), `${kind}: ${u}`);
    assert.ok(providerScopes({ name: kind, kind, clientId: 'c', redirectUrls: [] }).length > 0);
  }
  const gh = await providerEndpoints({ name: 'ghe', kind: 'github', clientId: 'c', authUrl: 'https://ghe.corp/login/oauth/authorize', redirectUrls: [] });
  assert.equal(gh.authUrl, 'https://ghe.corp/login/oauth/authorize');
  assert.equal(gh.tokenUrl, 'https://github.com/login/oauth/access_token');
  assert.deepEqual(providerScopes({ name: 'x', kind: 'google', clientId: 'c', scopes: ['openid'], redirectUrls: [] }), ['openid']);
});

test('https only, no credentials in URLs', () => {
  assert.ok(isHttpsUrl('https://idp.example/auth'));
  for (const u of ['http://idp.example/auth', 'https://user:pw@idp.example/', 'ftp://x', 'not a url', 42]) assert.ok(!isHttpsUrl(u), String(u));
  const errors = providerOptionErrors([{ name: 'x', kind: 'generic', clientId: 'c', authUrl: 'https://a/', tokenUrl: 'https://a/t', userInfoUrl: 'https://a/u', redirectUrls: ['https://app/cb#frag'] }], 'p');
  assert.ok(errors['p.0.redirectUrls'], 'a redirect URL with a fragment is refused');
  assert.deepEqual(providerOptionErrors([{ name: 'ok', kind: 'github', clientId: 'c', redirectUrls: ['http://localhost:5173/cb'] }], 'p'), {});
});
