/**
 * The upload session state machine (2-uploads-and-mail.md, "Upload session" states) on the store
 * alone, with a clock the test moves: expiry during a commit, acknowledgement without a re-run,
 * failures, a chunk in flight, and the payload reservation.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError } from '../../../src/errors/api-error.js';
import { DEFAULT_UPLOAD_BUDGETS } from '../../../src/uploads/budgets.js';
import { UploadStore, type NewUpload } from '../../../src/uploads/upload-store.js';

const who = { collection: 'users_c', id: 'aaaaaaaaaaaaaaa' };
const target = (length: number): NewUpload => ({ principalCollection: who.collection, principalId: who.id, collectionId: 'docs_c', recordId: 'bbbbbbbbbbbbbbb', fieldId: 'f1', filename: 'a.bin', mimetype: '', length, address: '' });

async function status(p: Promise<unknown>): Promise<number> {
  try {
    await p;
    return 0;
  } catch (err) {
    assert.ok(err instanceof ApiError, String(err));
    return err.status;
  }
}

async function fill(store: UploadStore, id: string, bytes: Buffer): Promise<void> {
  const sink = await store.chunk(id, who, 0, bytes.length);
  sink.write(bytes);
  assert.equal((await sink.end()).status, 204);
}

test('a commit admitted before expiry finishes after it; the slot goes at the next sweep', async () => {
  let now = 1_000_000;
  const store = new UploadStore({ ...DEFAULT_UPLOAD_BUDGETS, ttl_seconds: 10 }, null, [], () => {}, () => now);
  const s = await store.create(target(4));
  await fill(store, s.id, Buffer.from('abcd'));
  let release!: () => void;
  const running = store.commit(s.id, who, () => new Promise<void>((r) => { release = r; }));
  await new Promise((r) => setImmediate(r));
  now += 11_000; // past expiresAt while the record mutation runs
  assert.equal((await store.get(s.id, who)).state, 'committing', 'a committing session is not swept');
  release();
  await running;
  assert.equal(s.state, 'completed');
  assert.equal(await status(store.get(s.id, who)), 404, 'expired: swept at the next operation');
  assert.deepEqual(store.stats(), { sessions: 0, reservedBytes: 0 });
});

test('a completed session is acknowledged without running the mutation; a failed one is 409 and holds no payload', async () => {
  const store = new UploadStore({ ...DEFAULT_UPLOAD_BUDGETS, max_sessions_per_principal: 4 });
  const s = await store.create(target(3));
  await fill(store, s.id, Buffer.from('xyz'));
  let runs = 0;
  await store.commit(s.id, who, async (sess) => {
    runs++;
    assert.equal(sess.payload!.toString(), 'xyz', 'the mutation gets the fully buffered payload');
  });
  await store.commit(s.id, who, async () => { runs++; });
  assert.equal(runs, 1);
  assert.equal(store.stats().reservedBytes, 0, 'payload freed, slot kept');
  assert.equal(store.stats().sessions, 1);

  const f = await store.create(target(2));
  await fill(store, f.id, Buffer.from('no'));
  assert.equal(await status(store.commit(f.id, who, async () => { throw new ApiError(403, 'forbidden', 'hook said no'); })), 403);
  assert.equal(f.state, 'failed');
  assert.equal(f.payload, null);
  assert.equal(await status(store.commit(f.id, who, async () => {})), 409);
  assert.equal(await status(store.abort(f.id, who)), 409);
});

test('one chunk at a time; a commit or abort during a chunk; reservation against max_total_bytes', async () => {
  const store = new UploadStore({ ...DEFAULT_UPLOAD_BUDGETS, max_total_bytes: 10 * 1024 * 1024 });
  const s = await store.create(target(8 * 1024 * 1024));
  assert.equal(store.stats().reservedBytes, 8 * 1024 * 1024, 'reserved at creation');
  assert.equal(await status(store.create({ ...target(3 * 1024 * 1024), principalId: 'ccccccccccccccc' })), 429);
  const first = await store.chunk(s.id, who, 0, 4);
  assert.equal(await status(store.chunk(s.id, who, 0, 4)), 409, 'another chunk in flight');
  assert.equal(await status(store.commit(s.id, who, async () => {})), 409);
  first.write(Buffer.from('1234'));
  assert.equal((await first.end()).status, 204);
  assert.equal(s.offset, 4);
  // an abort while a chunk arrives removes the session: the chunk's end is 404, nothing acknowledged
  const second = await store.chunk(s.id, who, 4, 4);
  second.write(Buffer.from('5678'));
  await store.abort(s.id, who);
  assert.equal(store.stats().reservedBytes, 0);
  assert.equal(await status(Promise.resolve(second.end())), 404);
  assert.equal(s.offset, 4);
  const third = await store.create(target(8 * 1024 * 1024));
  const sink = await store.chunk(third.id, who, 0, -1);
  sink.write(Buffer.from('abc'));
  sink.abort(); // the client went away mid-body
  assert.equal(third.offset, 0, 'an aborted body acknowledges nothing');
  assert.equal(third.busy, false, 'and frees the session for the next chunk');
  const again = await store.chunk(third.id, who, 0, 3);
  again.write(Buffer.from('abc'));
  assert.equal((await again.end()).status, 204);
  assert.equal(third.offset, 3);
});

test('one client address holds at most its share of the sessions (default: half of max_sessions); an abort gives a slot back', async () => {
  const store = new UploadStore({ ...DEFAULT_UPLOAD_BUDGETS, max_sessions: 4, max_sessions_per_principal: 1 });
  const from = (principalId: string, address: string) => store.create({ ...target(1), principalId, address });
  const a = await from('a00000000000000', '203.0.113.1');
  await from('b00000000000000', '203.0.113.1');
  assert.equal(await status(from('c00000000000000', '203.0.113.1')), 429, 'the address share (2 of 4) is taken');
  await from('c00000000000000', '198.51.100.7'); // another address still gets a slot
  await store.abort(a.id, { collection: who.collection, id: 'a00000000000000' });
  await from('d00000000000000', '203.0.113.1'); // the aborted session's slot is back
  // sessions of unknown address (restored by the persistence mode) count against no share
  await from('e00000000000000', '');
  assert.equal(store.stats().sessions, 4);
  const explicit = new UploadStore({ ...DEFAULT_UPLOAD_BUDGETS, max_sessions_per_principal: 1, max_sessions_per_address: 1 });
  await explicit.create({ ...target(1), address: '203.0.113.1' });
  assert.equal(await status(explicit.create({ ...target(1), principalId: 'f00000000000000', address: '203.0.113.1' })), 429);
});
