/**
 * Mail benchmark: `npm run bench:mail`. In one process, on a fresh data directory:
 *
 * 1. durable `enqueue`: 20,000 messages handed to the queue at once (each a committed
 *    `_mailQueue` row before its promise resolves), messages/s; the baseline of the same run is
 *    the same number of record creates through the same writer (RecordWriter), target ≥ 10,000
 *    messages/s;
 * 2. delivery: 1,000 queued messages to a local SMTP server (smtp-server) through the pooled
 *    nodemailer transport, seconds until the server has them all, target under 5 s; the baseline
 *    is the same 1,000 messages sent straight through the same transport, 8 at a time.
 * Writes bench/results/mail.md and prints it.
 */
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SMTPServer } from 'smtp-server';
import { loadServeConfig } from '../src/config/config.js';
import { createLogger } from '../src/log/logger.js';
import { openDataDir } from '../src/boot/open-data.js';
import { DurableMailQueue } from '../src/mail/mail-queue.js';
import { recordWriteRepository } from '../src/boot/record-repositories.js';
import { collectionsRepository, mailRepository } from '../src/boot/repositories.js';
import { createMailTransport } from '../src/mail/transports.js';
import { CollectionsService } from '../src/collections/collections-service.js';
import { RecordWriter } from '../src/records/records-write.js';
import { REPO_ROOT } from './lib/svc.js';

const N = 20_000;
const M = 1_000;
const log = (m: string) => console.error(`bench:mail: ${m}`);

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-mail-'));
  let received = 0;
  const smtp = new SMTPServer({ authOptional: true, disabledCommands: ['STARTTLS'], logger: false, onData(stream, _s, cb) { stream.on('data', () => {}); stream.on('end', () => { received++; cb(); }); } });
  await new Promise<void>((r) => smtp.listen(0, '127.0.0.1', () => r()));
  const port = (smtp.server.address() as { port: number }).port;
  const logger = createLogger({ format: 'text', level: 'warn', requests: false });
  const config = loadServeConfig({ 'data-dir': dir }, {});
  const data = await openDataDir(config, logger, 0);
  const transport = createMailTransport({ smtp: { host: '127.0.0.1', port, transport: 'none', from: 'bench@example.com' } }, logger);
  try {
    const queue = new DurableMailQueue(mailRepository(data.store), transport, logger);
    // 1. enqueue against record creates through the same writer
    const collections = new CollectionsService(collectionsRepository(data.store), data.files);
    const c = await collections.create({ name: 'notes', type: 'base', fields: [{ name: 'to', type: 'text' }, { name: 'subject', type: 'text' }, { name: 'text', type: 'text' }] });
    const writes = new RecordWriter(recordWriteRepository(data.store), data.files);
    const su = { superuser: true, collection: data.store.registry.find('_superusers')!, record: { id: '' } };
    const msg = (i: number) => ({ to: `user${i}@example.com`, subject: `Message ${i}`, text: `Hello number ${i}, this is the body of a benchmark message.` });
    let t = performance.now();
    await Promise.all(Array.from({ length: N }, (_, i) => writes.create(c, su, msg(i), null)));
    const createRate = N / ((performance.now() - t) / 1000);
    t = performance.now();
    await Promise.all(Array.from({ length: N }, (_, i) => queue.enqueue(msg(i), 'bench')));
    const enqueueRate = N / ((performance.now() - t) / 1000);
    log(`enqueue ${Math.round(enqueueRate)}/s, creates ${Math.round(createRate)}/s`);
    // the rows just queued are not for delivery: clear them
    const { bindValue } = await import('../src/store/bind.js');
    await data.store.writer.write([{ sql: 'DELETE FROM "_mailQueue"', params: [].map(bindValue) }]);

    // 2. delivery of 1,000 through the queue, against the same transport driven directly
    t = performance.now();
    for (let i = 0; i < M; i += 8) await Promise.all(Array.from({ length: Math.min(8, M - i) }, (_, k) => transport.send(msg(i + k))));
    const direct = (performance.now() - t) / 1000;
    received = 0;
    await Promise.all(Array.from({ length: M }, (_, i) => queue.enqueue(msg(i), 'bench')));
    t = performance.now();
    queue.start();
    while (received < M && performance.now() - t < 60_000) await new Promise((r) => setTimeout(r, 5));
    const queued = (performance.now() - t) / 1000;
    await queue.close();
    log(`1,000 delivered through the queue in ${queued.toFixed(2)} s; directly in ${direct.toFixed(2)} s`);
    const md = [
      '# Mail (`npm run bench:mail`)',
      '',
      `${new Date().toISOString()}, Node ${process.version}; one process, a fresh data directory, a local smtp-server.`,
      '',
      '| series | result | baseline (same run) | ratio | target |',
      '| --- | ---: | --- | ---: | --- |',
      `| durable \`enqueue\`, ${N.toLocaleString('en')} at once | ${Math.round(enqueueRate).toLocaleString('en')} messages/s | record creates through the same writer ${Math.round(createRate).toLocaleString('en')}/s | ${(enqueueRate / createRate).toFixed(2)} | ≥ 10,000/s: ${enqueueRate >= 10_000 ? 'met' : '**not met**'} |`,
      `| 1,000 queued messages delivered to SMTP (pooled) | ${queued.toFixed(2)} s | the same transport directly, 8 at a time: ${direct.toFixed(2)} s | ${(direct / queued).toFixed(2)} | under 5 s: ${queued < 5 ? 'met' : '**not met**'} |`,
      '',
    ].join('\n');
    mkdirSync(join(REPO_ROOT, 'bench', 'results'), { recursive: true });
    writeFileSync(join(REPO_ROOT, 'bench', 'results', 'mail.md'), md);
    console.log(md);
  } finally {
    transport.close();
    await data.close();
    smtp.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
process.exit(0);
