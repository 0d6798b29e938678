/**
 * The durable mail queue over a fake MailRepository (src/mail/mail-queue.ts; docs/framework.md,
 * "Mail"): the queue takes only the mail statements and the writer, so an in-memory table stands
 * in for `_mailQueue` here. The real tables are covered by test/e2e/mail-queue.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DurableMailQueue, type MailRepository } from '../../../src/mail/mail-queue.js';
import type { MailMessage, MailTransport } from '../../../src/mail/transports.js';
import type { MailRowStore, QueuedMail } from '../../../src/store/mail-store.js';
import type { WriteStep } from '../../../src/store/write-job.js';
import { createLogger } from '../../../src/log/logger.js';

interface Row extends QueuedMail { nextAt: number | null; error: string | null }

/** `_mailQueue` in memory: each step's `sql` names what it does, its params carry the values. */
function fakeRepo(): { repo: MailRepository; rows: Map<string, Row> } {
  const rows = new Map<string, Row>();
  const step = (sql: string, ...params: WriteStep['params']): WriteStep => ({ sql, params });
  const pending = () => [...rows.values()].filter((r) => r.nextAt !== null);
  const store: Partial<MailRowStore> = {
    enqueueStep: (id, queue, message, account, nowMs) => step('enqueue', id, queue, message, account, nowMs),
    deliveredStep: (id) => step('delivered', id),
    failedStep: (id, attempts, error, nextMs) => step('failed', id, attempts, error, nextMs),
    due: async (nowMs, limit) => pending().filter((r) => r.nextAt! <= nowMs).slice(0, limit),
    nextDue: async () => (pending().length ? Math.min(...pending().map((r) => r.nextAt!)) : undefined),
    counts: async () => ({ pending: pending().length, failed: rows.size - pending().length }),
  };
  const repo: MailRepository = {
    rows: store as MailRowStore,
    write: async (steps) => steps.map(({ sql, params: p }) => {
      const id = String(p[0]);
      if (sql === 'enqueue') rows.set(id, { id, queue: String(p[1]), message: String(p[2]), account: String(p[3]), attempts: 0, nextAt: Number(p[4]), error: null });
      else if (sql === 'delivered') rows.delete(id);
      else Object.assign(rows.get(id)!, { attempts: Number(p[1]), error: String(p[2]), nextAt: p[3] === null ? null : Number(p[3]) });
      return { changes: 1 };
    }),
  };
  return { repo, rows };
}

const logger = createLogger({ format: 'text', level: 'err', requests: false, write: () => {} });
const msg: MailMessage = { to: 'ann@example.com', subject: 'Hi', text: 'hello' };

test('enqueue commits a row through the repository; delivery deletes it', async () => {
  const { repo, rows } = fakeRepo();
  const sent: MailMessage[] = [];
  const transport: MailTransport = { kind: 'log', send: async (m) => void sent.push(m), close: () => {} };
  const queue = new DurableMailQueue(repo, transport, logger);
  const id = await queue.enqueue(msg, 'app', 'acc1');
  assert.deepEqual({ ...rows.get(id), nextAt: 0 }, { id, queue: 'app', message: JSON.stringify(msg), account: 'acc1', attempts: 0, nextAt: 0, error: null });
  assert.deepEqual(await queue.counts(), { pending: 1, failed: 0 });
  queue.start();
  await queue.whenIdle();
  await queue.close();
  assert.deepEqual(sent, [msg]);
  assert.equal(rows.size, 0);
});

test('a failing backend is retried after the delays, then the row stays failed', async () => {
  const { repo, rows } = fakeRepo();
  let attempts = 0;
  const transport: MailTransport = { kind: 'log', send: async () => { attempts++; throw new Error('refused'); }, close: () => {} };
  const queue = new DurableMailQueue(repo, transport, logger, null, [5, 5]);
  const id = await queue.enqueue(msg, 'app');
  queue.start();
  // whenIdle answers during a retry's wait (nothing is due then): wait for the last attempt instead
  for (const until = Date.now() + 5_000; rows.get(id)!.nextAt !== null && Date.now() < until;) await new Promise((r) => setTimeout(r, 5));
  await queue.close();
  assert.equal(attempts, 3);
  assert.deepEqual({ attempts: rows.get(id)!.attempts, error: rows.get(id)!.error, nextAt: rows.get(id)!.nextAt }, { attempts: 3, error: 'refused', nextAt: null });
  assert.deepEqual(await queue.counts(), { pending: 0, failed: 1 });
});

test('a suppressed recipient is not sent and the row is failed', async () => {
  const { repo, rows } = fakeRepo();
  const transport: MailTransport = { kind: 'log', send: async () => assert.fail('sent'), close: () => {} };
  const queue = new DurableMailQueue(repo, transport, logger, async (m, account) => m.to === 'ann@example.com' && account === 'acc1');
  const id = await queue.enqueue(msg, 'app', 'acc1');
  queue.start();
  await queue.whenIdle();
  await queue.close();
  assert.deepEqual({ error: rows.get(id)!.error, nextAt: rows.get(id)!.nextAt }, { error: 'the recipient is suppressed', nextAt: null });
});
