/**
 * Upload budgets (2-uploads-and-mail.md, "Upload budgets"): every constraint of the table, the
 * environment of the standalone server, and the app definition's `uploads` group, which
 * defineApp rejects before anything starts ("Unknown keys or invalid budgets fail the build";
 * "Configuring the group without the build flag is an error").
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_UPLOAD_BUDGETS, DURABLE_MAX_UPLOAD_BYTES, GIB, MIB, addressShare, budgetProblems, resolveBudgets } from '../../../src/uploads/budgets.js';
import { AppDefinitionError, defineApp, featureNames } from '../../../src/app/definition.js';

test('the defaults are the spec\'s and valid', () => {
  assert.deepEqual({ ...DEFAULT_UPLOAD_BUDGETS }, { max_sessions: 8, max_sessions_per_principal: 2, max_upload_bytes: 8 * MIB, max_total_bytes: 32 * MIB, max_chunk_bytes: MIB, ttl_seconds: 900, durable: false });
  assert.deepEqual(budgetProblems({}), []);
});

test('each constraint of the budget table is enforced', () => {
  const cases: Array<[Record<string, unknown>, RegExp]> = [
    [{ max_sessions: 0 }, /max_sessions must be a positive integer/],
    [{ max_sessions: 1025 }, /max_sessions must be at most 1024/],
    [{ max_sessions: 4, max_sessions_per_principal: 5 }, /max_sessions_per_principal must be at most max_sessions/],
    [{ max_sessions: 4, max_sessions_per_address: 5 }, /max_sessions_per_address must be at most max_sessions/],
    [{ max_sessions_per_address: 0 }, /max_sessions_per_address must be a positive integer/],
    [{ max_chunk_bytes: 9 * MIB }, /max_chunk_bytes must be at most max_upload_bytes/],
    [{ max_upload_bytes: 33 * MIB }, /max_upload_bytes must be at most max_total_bytes/],
    [{ max_upload_bytes: GIB + 1, max_total_bytes: GIB + 1 }, /max_upload_bytes must be at most 1 GiB/],
    [{ max_total_bytes: GIB + 1 }, /max_total_bytes must be at most 1 GiB/],
    [{ ttl_seconds: 86_401 }, /ttl_seconds must be at most one day/],
    [{ ttl_seconds: 1.5 }, /ttl_seconds must be a positive integer/],
    [{ max_chunk_bytes: '1' }, /max_chunk_bytes must be a positive integer/],
    [{ durable: 'yes' }, /durable must be true or false/],
    [{ durable: true, max_upload_bytes: GIB, max_total_bytes: GIB }, new RegExp(`at most ${DURABLE_MAX_UPLOAD_BYTES} in the persistence mode`)],
    [{ max_bytes: 5 }, /unknown key "max_bytes"/],
  ];
  for (const [group, re] of cases) {
    const p = budgetProblems(group);
    assert.ok(p.some((m) => re.test(m)), `${JSON.stringify(group)} → ${JSON.stringify(p)}`);
  }
  // the limits themselves are allowed
  assert.deepEqual(budgetProblems({ max_sessions: 1024, max_sessions_per_principal: 1024, max_upload_bytes: GIB, max_total_bytes: GIB, max_chunk_bytes: GIB, ttl_seconds: 86_400 }), []);
  assert.deepEqual(budgetProblems({ durable: true, max_upload_bytes: DURABLE_MAX_UPLOAD_BYTES, max_total_bytes: GIB }), []);
});

test('the standalone server reads SERVICE_UPLOAD_*; the app group wins; bad values are refused', () => {
  const b = resolveBudgets({ SERVICE_UPLOAD_MAX_SESSIONS: '20', SERVICE_UPLOAD_TTL_SECONDS: '60' }, { max_sessions: 30 }, true);
  assert.equal(b.max_sessions, 30);
  assert.equal(b.ttl_seconds, 60);
  assert.equal(b.durable, true);
  assert.throws(() => resolveBudgets({ SERVICE_UPLOAD_MAX_SESSIONS: 'many' }, undefined, false), /max_sessions must be a positive integer/);
  assert.throws(() => resolveBudgets({ SERVICE_UPLOAD_MAX_CHUNK_BYTES: String(64 * MIB) }, undefined, false), /max_chunk_bytes must be at most max_upload_bytes/);
});

test('defineApp: the uploads group needs the feature, takes only known keys and valid budgets', () => {
  const problems = (def: unknown): string[] => {
    try {
      defineApp(def as never);
    } catch (err) {
      assert.ok(err instanceof AppDefinitionError);
      return err.problems;
    }
    return [];
  };
  assert.match(problems({ uploads: { max_sessions: 4 } }).join('\n'), /need the resumableUploads feature/);
  assert.match(problems({ features: { resumableUploads: true }, uploads: { max_sessions: 0, nope: 1 } }).join('\n'), /unknown key "nope"[\s\S]*max_sessions must be a positive integer|max_sessions must be a positive integer[\s\S]*unknown key "nope"/);
  assert.match(problems({ features: { resumableUploads: { durable: 'yes' } } }).join('\n'), /resumableUploads\.durable: must be a boolean/);
  assert.match(problems({ features: { resumableUploads: { persist: true } } }).join('\n'), /resumableUploads\.persist: unknown key/);
  assert.match(problems({ features: ['durable-resumable-uploads'] }).join('\n'), /needs resumable-uploads/);
  assert.deepEqual(problems({ features: { resumableUploads: { durable: true } }, uploads: { max_sessions: 16, ttl_seconds: 60 } }), []);
  assert.deepEqual(featureNames({ resumableUploads: { durable: true } }).sort(), ['durable-resumable-uploads', 'resumable-uploads']);
  assert.deepEqual(featureNames({ resumableUploads: {} }), ['resumable-uploads']);
  assert.deepEqual(featureNames({ resumableUploads: true }), ['resumable-uploads']);
});

test('the address share: SERVICE_UPLOAD_MAX_SESSIONS_PER_ADDRESS or the app group, else half of max_sessions rounded up', () => {
  assert.equal(addressShare(resolveBudgets({}, undefined, false)), 4);
  assert.equal(addressShare(resolveBudgets({ SERVICE_UPLOAD_MAX_SESSIONS: '5' }, undefined, false)), 3);
  assert.equal(addressShare(resolveBudgets({ SERVICE_UPLOAD_MAX_SESSIONS_PER_ADDRESS: '6' }, undefined, false)), 6);
  assert.equal(addressShare(resolveBudgets({}, { max_sessions_per_address: 2 }, false)), 2);
  assert.deepEqual(budgetProblems({ max_sessions: 3 }), [], 'the derived share never exceeds max_sessions');
});
