import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ACTIVE_CODES, RETIRED_CODES, lookupCode } from '../../../src/errors/codes.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const codes = ACTIVE_CODES.map((e) => e.code);

test('active codes are alphabetical and unique', () => {
  assert.deepEqual(codes, [...codes].sort());
  assert.equal(new Set(codes).size, codes.length);
});

test('the conventions ledger (14 general codes, 27 validation_* field codes) plus the codes appended since', () => {
  // appended: request_timeout (the body deadline), bad_gateway (OAuth2 providers),
  // reauthentication_required (passkey registration needs a recent sign-in), batch_failed (a
  // request of POST /api/batch failed, docs/api.md "Batch")
  const general = ['bad_gateway', 'bad_request', 'batch_failed', 'collections_frozen', 'conflict', 'email_not_verified', 'forbidden', 'gone', 'internal',
    'not_found', 'not_implemented', 'overloaded', 'payload_too_large', 'reauthentication_required', 'request_timeout', 'too_many_requests', 'unauthorized', 'validation_failed'];
  const field = codes.filter((c) => c.startsWith('validation_') && c !== 'validation_failed');
  assert.equal(field.length, 27);
  assert.deepEqual(codes.filter((c) => !field.includes(c)), general);
  for (const known of ['validation_invalid_name', 'validation_min', 'validation_duplicate_name', 'validation_reserved_suffix']) {
    assert.ok(field.includes(known), known);
  }
});

test('every code is snake_case with a non-empty summary and explanation', () => {
  for (const e of ACTIVE_CODES) {
    assert.match(e.code, /^[a-z][a-z0-9]*(_[a-z0-9]+)*$/, e.code);
    assert.ok(e.summary.trim().length > 0 && !e.summary.includes('\n'), `${e.code} summary`);
    assert.ok(e.explanation.trim().length > 40, `${e.code} explanation`);
  }
});

test('no retired code is active; lookupCode finds active codes only', () => {
  for (const r of RETIRED_CODES) assert.ok(!codes.includes(r), r);
  assert.equal(lookupCode('validation_min')?.code, 'validation_min');
  assert.equal(lookupCode('nope'), undefined);
  assert.equal(lookupCode('VALIDATION_MIN'), undefined);
});

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...sourceFiles(full));
    else if (entry.name.endsWith('.ts')) out.push(full);
  }
  return out;
}

test('every code the source emits is in the ledger', () => {
  // Literal codes: `new ApiError(<status>, '<code>'` and any quoted 'validation_<name>' string
  // (which covers `code: 'validation_…'`). Template literals are dynamic and not matched here.
  const literal = [
    /new\s+ApiError\(\s*\d{3}\s*,\s*(['"])([^'"]+)\1/g,
    /(['"`])(validation_[a-z0-9_]+)\1/g,
  ];
  // The field codecs build `validation_<name>` through helpers from src/collections/fields/common.ts:
  // `fieldError('<name>', …)` and `fail('<name>', …)`; scan those in files importing them.
  const helper = /\b(?:fieldError|fail)\(\s*(['"])([a-z0-9_]+)\1/g;
  const importsHelper = /import\s*\{[^}]*\b(?:fieldError|fail)\b[^}]*\}\s*from\s*['"][^'"]*common\.js['"]/;
  const unknown: string[] = [];
  let seen = 0;
  const check = (file: string, code: string): void => {
    seen++;
    if (!lookupCode(code)) unknown.push(`${path.relative(root, file)}: ${code}`);
  };
  for (const dir of ['src', 'workers']) {
    if (!fs.existsSync(path.join(root, dir))) continue;
    for (const file of sourceFiles(path.join(root, dir))) {
      const text = fs.readFileSync(file, 'utf8');
      for (const re of literal) for (const m of text.matchAll(re)) check(file, m[2]);
      if (importsHelper.test(text)) for (const m of text.matchAll(helper)) check(file, `validation_${m[2]}`);
    }
  }
  assert.ok(seen > 0, 'the scan found no codes at all; the patterns are probably stale');
  assert.deepEqual(unknown, []);
});
