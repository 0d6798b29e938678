/**
 * Cursor tokens (src/records/cursor.ts): exact round trips of every key value type, the three
 * token kinds, forgery, malformed and oversized tokens, the record-id fallback for long values,
 * and stateful expiry (with an in-memory stand-in for `_cursorStates`).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { ApiError } from '../../../src/errors/api-error.js';
import { CursorCodec, MAX_CURSOR_LENGTH, bindingHash, type CursorStateStore } from '../../../src/records/cursor.js';
import type { KeyValue } from '../../../src/store/sql/keyset.js';
import type { WriteStep } from '../../../src/store/write-job.js';
import { tamperBase64url } from '../../helpers/tamper.js';

const secret = randomBytes(32);
const H = bindingHash(['pbc_x', 'r."id"', '', '']);

/** The status a read refuses with (thrown, or the rejection of a stateful read); 200 when it answers. */
async function statusOf(fn: () => unknown): Promise<number> {
  try {
    await fn();
  } catch (err) {
    assert.ok(err instanceof ApiError, `expected ApiError, got ${String(err)}`);
    return err.status;
  }
  return 200;
}

function status(fn: () => unknown): number {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof ApiError, `expected ApiError, got ${String(err)}`);
    return err.status;
  }
  return 200;
}

/** `_cursorStates` in memory: the codec only issues these two statements. */
function memoryStates(): CursorStateStore & { rows: Map<string, [string, number]> } {
  const rows = new Map<string, [string, number]>();
  return {
    rows,
    get: async (_sql, params) => {
      const r = rows.get(String(params[0]));
      return r ? [r[0], BigInt(r[1])] : undefined;
    },
    write: async (steps: WriteStep[]) => {
      const ins = steps.find((s) => s.sql.startsWith('INSERT'))!;
      rows.set(String(ins.params[0]), [String(ins.params[1]), Number(ins.params[2])]);
    },
  };
}

const VALUES: KeyValue[] = ['text "quoted" é', 3.25, -0.5, 12345678901234567n, -(2n ** 63n), null, new Uint8Array([0, 1, 255]), 'abc12345678901x'];

for (const kind of ['stateless', 'signed', 'stateful'] as const) {
  test(`${kind}: values round-trip exactly, both directions`, async () => {
    const codec = new CursorCodec(kind, secret, 60, memoryStates());
    const t = await codec.issue(H, { keys: VALUES, id: 'abc12345678901x' }, { keys: ['p', 1], id: 'p' });
    const next = await codec.read(t.next!);
    assert.equal(next.binding, H);
    assert.equal(next.dir, 'n');
    assert.deepEqual(next.keys!.map((v) => (v instanceof Uint8Array ? [...v] : v)), VALUES.map((v) => (v instanceof Uint8Array ? [...v] : v)));
    assert.equal((await codec.read(t.prev!)).dir, 'p');
    assert.deepEqual(await codec.issue(H, null, null), { next: null, prev: null });
  });
}

test('malformed and oversized tokens are 400', () => {
  const codec = new CursorCodec('stateless', null, 60, null);
  for (const bad of ['x', '!!!', Buffer.from('{"h":1}').toString('base64url'), Buffer.from('[]').toString('base64url'),
    Buffer.from('{"h":"a","d":"x","k":[1]}').toString('base64url'), Buffer.from('{"h":"a","d":"n","k":[{"i":"1e3"}]}').toString('base64url'),
    Buffer.from('{"h":"a","d":"n","k":[true]}').toString('base64url'), Buffer.from('{"h":"a","d":"n","k":[]}').toString('base64url')]) {
    assert.equal(status(() => codec.read(bad)), 400, bad);
  }
  assert.equal(status(() => codec.read('a'.repeat(MAX_CURSOR_LENGTH + 1))), 400);
});

test('signed: a forged or re-tagged token is 400; a stateless token is not accepted', async () => {
  const codec = new CursorCodec('signed', secret, 60, null);
  const { next } = await codec.issue(H, { keys: [5, 'abc'], id: 'abc' }, null);
  const [body, tag] = next!.split('.');
  const forgedBody = Buffer.from(JSON.stringify({ h: H, d: 'n', k: [0, 'abc'] })).toString('base64url');
  assert.equal(status(() => codec.read(`${forgedBody}.${tag}`)), 400);
  assert.equal(status(() => codec.read(`${body}.${tamperBase64url(tag)}`)), 400);
  assert.equal(status(() => codec.read(body)), 400);
  const other = new CursorCodec('signed', randomBytes(32), 60, null);
  assert.equal(status(() => other.read(next!)), 400);
  assert.equal((await codec.read(next!)).keys![0], 5);
});

test('a boundary too long to carry is referenced by record id', async () => {
  const codec = new CursorCodec('stateless', null, 60, null);
  const { next } = await codec.issue(H, { keys: ['x'.repeat(3000), 'rid123'], id: 'rid123' }, null);
  assert.ok(next!.length <= MAX_CURSOR_LENGTH);
  assert.deepEqual(codec.read(next!), { binding: H, dir: 'n', recordId: 'rid123' });
});

test('stateful: unknown or expired ids are 410, malformed ids 400', async () => {
  const states = memoryStates();
  const codec = new CursorCodec('stateful', null, 60, states);
  const { next } = await codec.issue(H, { keys: [1, 'a'], id: 'a' }, null);
  assert.match(next!, /^[A-Za-z0-9_-]{22}n$/);
  assert.equal((await codec.read(next!)).keys![0], 1);
  assert.equal(await statusOf(() => codec.read(`${'A'.repeat(22)}n`)), 410);
  assert.equal(await statusOf(() => codec.read(`${next!.slice(0, 22)}p`)), 410); // no previous page was issued
  assert.equal(await statusOf(() => codec.read('short')), 400);
  const row = states.rows.get(next!.slice(0, 22))!;
  row[1] = Date.now() - 1;
  assert.equal(await statusOf(() => codec.read(next!)), 410);
});
