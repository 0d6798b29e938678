/**
 * RecordReader and RecordWriter over small fakes of their repositories
 * (src/records/record-repositories.ts): a view reads through the repository's reader with the
 * view statement under the caller's rule, a denied view reads nothing; a delete hands one write
 * job to the repository's writer (the rule in its WHERE, an auth record's side rows with it), and
 * a constraint failure of the job comes back as the repository's dialect types it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Collection } from '../../../src/model/schema.js';
import type { RuleCheck } from '../../../src/rules/access.js';
import type { RecordReadRepository, RecordWriteRepository } from '../../../src/records/record-repositories.js';
import type { WriteStep } from '../../../src/store/write-job.js';
import { buildCodec } from '../../../src/records/record-codec.js';
import * as sqliteJson from '../../../src/store/sqlite/record-json.js';
import { sqliteStores } from '../../../src/store/sqlite/sql-stores.js';
import type { Reader } from '../../../src/store/sqlite/reader.js';
import { RecordReader } from '../../../src/records/records-read.js';
import { RecordWriter } from '../../../src/records/records-write.js';
import { ApiError } from '../../../src/errors/api-error.js';

const base = { system: false, indexes: [], options: {}, listRule: null, viewRule: null, createRule: null, updateRule: null, deleteRule: null, created: '', updated: '' };
const notes: Collection = { ...base, id: 'pbc_notes0', name: 'notes', type: 'base', fields: [{ id: 'ft', name: 'title', type: 'text', options: {} }] };
const users: Collection = { ...base, id: 'pbc_users0', name: 'users', type: 'auth', fields: [] };

const sql = sqliteStores(null as unknown as Reader);
const ownRule: RuleCheck & { kind: 'where' } = { kind: 'where', sql: 'r."owner" = ?', params: ['u1'], readsRecord: true };

/** A RecordReadRepository whose reader answers `row` and notes each read; `allow`: the view rule's verdict. */
function readRepository(row: unknown[] | undefined, allow: boolean): { repo: RecordReadRepository; reads: Array<[string, unknown[]]> } {
  const reads: Array<[string, unknown[]]> = [];
  const repo = {
    registry: { byId: () => undefined, byName: () => undefined, version: () => 1, schemaGeneration: () => 1 },
    rules: { check: () => (allow ? ownRule : { kind: 'deny' }) },
    codec: (c: Collection) => buildCodec(c, sqliteJson),
    reader: { get: async (q: string, params: unknown[]) => (reads.push([q, params]), row) },
    sql,
  } as unknown as RecordReadRepository;
  return { repo, reads };
}

test('a view reads through the repository under the caller\'s rule; a denied view reads nothing', async () => {
  const row = ['r1', '2026-01-01 00:00:00.000Z', '2026-01-01 00:00:00.000Z', 'hello'];
  const { repo, reads } = readRepository(row, true);
  const codec = buildCodec(notes, sqliteJson);
  const rec = await new RecordReader(repo).view(notes, 'r1', null, { expand: null, projection: null });
  assert.deepEqual(rec, codec.fromRow(row));
  assert.deepEqual(reads, [[sql.records.view(notes, codec.columns, ownRule.sql, undefined), ['r1', 'u1']]]);

  const denied = readRepository(row, false);
  await assert.rejects(new RecordReader(denied.repo).view(notes, 'r1', null, { expand: null, projection: null }), (e: unknown) => e instanceof ApiError && e.status === 404);
  assert.deepEqual(denied.reads, []);
});

/** A RecordWriteRepository whose writer notes each job and answers one changed row per step, or fails with `failure`. */
function writeRepository(failure?: Error): { repo: RecordWriteRepository; jobs: WriteStep[][] } {
  const jobs: WriteStep[][] = [];
  const repo: RecordWriteRepository = {
    registry: { all: () => [], byId: () => undefined, version: () => 1 },
    rules: { check: () => ownRule },
    codec: (c) => buildCodec(c, sqliteJson),
    reader: { get: async () => undefined },
    writer: {
      write: async (steps) => {
        jobs.push(steps);
        if (failure) throw failure;
        return steps.map(() => ({ changes: 1 }));
      },
    },
    sql: {
      records: sql.records,
      auth: { recordSideRowsDeleteSteps: (cid, id) => [{ sql: 'DELETE FROM "side"', params: [cid, id] }] },
      // a constraint failure comes back as this typed error (the backend's ConstraintViolation)
      dialect: { constraintError: (e) => (e instanceof Error && e.message === 'constraint' ? (new TypeError('typed') as never) : null) },
    },
  };
  return { repo, jobs };
}

test('a delete hands one job to the repository writer, with an auth record\'s side rows', async () => {
  const { repo, jobs } = writeRepository();
  await new RecordWriter(repo).delete(notes, 'r1', null);
  assert.equal(jobs.length, 1);
  assert.deepEqual(jobs[0].map((s) => [s.sql, s.params]), [[sql.records.delete(notes, ownRule.sql), ['r1', 'u1']]]);

  await new RecordWriter(repo).delete(users, 'u9', null);
  assert.equal(jobs.length, 2);
  assert.deepEqual(jobs[1].map((s) => [s.sql, s.params]), [[sql.records.delete(users, ownRule.sql), ['u9', 'u1']], ['DELETE FROM "side"', [users.id, 'u9']]]);
});

test('a failed job is typed by the repository\'s dialect', async () => {
  const { repo } = writeRepository(new Error('constraint'));
  await assert.rejects(new RecordWriter(repo).delete(notes, 'r1', null), (e: unknown) => e instanceof TypeError && e.message === 'typed');
  const other = writeRepository(new Error('disk full'));
  await assert.rejects(new RecordWriter(other.repo).delete(notes, 'r1', null), /disk full/);
});
