// Magic-link redirect targets (spec 1-core-api.md, "Magic-link consume"): every rejection case,
// the allow-list (prefixes and exact paths), the fallback to the default and an unsafe default.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isSafeRelativePath, magicLinkRedirect } from '../../../src/auth/redirects.js';

test('safe relative paths', () => {
  for (const ok of ['/', '/app', '/app/inbox?x=1#top', '/a.b/c', '/.well-known-ish', '/x..y']) assert.ok(isSafeRelativePath(ok), ok);
  const bad = [
    '', 'app', 'https://evil.example/', 'http:/x', '//evil.example', '///x', '/\\evil', '\\\\evil', '/a\\b',
    '/.', '/./a', '/a/.', '/..', '/a/../b', '/a/..', '/%2e%2e/x', '/%2E/x', '/a%2fb', '/a%2Fb', '/a%5cb', '/a%5Cb',
    '/a\r\nSet-Cookie: x', '/a\nb', '/a\u0000b', '/a\u007fb', '/a\tb', 'javascript:alert(1)', 42, null, undefined, `/${'a'.repeat(3000)}`,
  ];
  for (const b of bad) assert.equal(isSafeRelativePath(b), false, JSON.stringify(b));
});

test('allow-list, fallback to the default, unsafe default to /', () => {
  const allow = ['/app/', '/exact'];
  assert.equal(magicLinkRedirect('/app/x', allow, '/home'), '/app/x');
  assert.equal(magicLinkRedirect('/app/', allow, '/home'), '/app/');
  assert.equal(magicLinkRedirect('/exact?q=1', allow, '/home'), '/exact?q=1');
  assert.equal(magicLinkRedirect('/exact/more', allow, '/home'), '/home');
  assert.equal(magicLinkRedirect('/application', allow, '/home'), '/home');
  assert.equal(magicLinkRedirect(undefined, allow, '/home'), '/home');
  assert.equal(magicLinkRedirect('//evil', [], '/home'), '/home');
  assert.equal(magicLinkRedirect('/anything', [], '/home'), '/anything', 'an empty list allows any safe path');
  assert.equal(magicLinkRedirect('//evil', [], '//evil.example'), '/', 'an unsafe default degrades to /');
  assert.equal(magicLinkRedirect(undefined, [], undefined), '/');
  assert.equal(magicLinkRedirect('/x', ['/y'], '/../up'), '/');
});
