/**
 * `svc import --collection=NAME FILE [--format=csv|json|ndjson] [--on-error=stop|skip]
 * [--upsert [--key=FIELD]] [--strict]` (docs/operations.md, "Command line" and
 * "Bulk import"; src/ops/import.ts), and `--oauth2-links` for the offline OAuth2 link import
 * (rows `{record, provider, providerId}`).
 *
 * Runs with the data directory locked (refused while a server holds it: its caches would not see
 * the rows; the refusal says to stop the server or to use the REST API). A column the collection
 * does not have is warned about once on stderr (`--strict`: refused before anything is written).
 * `--upsert` updates the record a row's key names instead of creating one. Progress (rows/s,
 * ETA) goes to stderr when it is a terminal; the summary goes to stdout. Exit 0 when every row
 * was imported, 3 when rows were skipped (`--on-error=skip`), 1 when the import stopped at a
 * refused row (`--on-error=stop`, the default) or could not run.
 */
import { existsSync } from 'node:fs';
import { Command, Option } from 'clipanion';
import { SvcCommand } from '../base-command.js';
import { acquireDataDirLock, LockError } from '../../src/config/data-dir-lock.js';
import { bootstrapLogger } from '../../src/log/logger.js';
import type { ImportFormat, ImportResult } from '../../src/ops/import.js';

export class ImportCommand extends SvcCommand {
  static paths = [['import']];
  static usage = Command.Usage({
    description: 'Import records from a CSV, JSON array or NDJSON file into a collection',
    details: 'Every row is validated exactly as the API validates a create. --on-error=stop (default) stops at the first refused row and keeps the rows before it; --on-error=skip imports the rest and exits 3 (a malformed CSV row is one refused row). A column the collection does not have is dropped with a warning, or refused with --strict. --upsert updates the record a row\'s id (or --key=FIELD, a unique field) names, so a stopped import can be run again. With --app the app\'s record hooks run for every row (beforeCreate may change or refuse it). The server must be stopped (or create rows through its REST API).',
    examples: [['CSV with a header row', '$0 import --collection=cities cities.csv'], ['Skip bad rows', '$0 import --collection=posts posts.ndjson --on-error=skip --json'], ['Run again after a stop, matching rows by a unique field', '$0 import --collection=users users.csv --upsert --key=email']],
  });

  collection = Option.String('--collection', { required: true, description: 'The collection to import into' });
  file = Option.String({ required: true, name: 'FILE' });
  format = Option.String('--format', { description: 'csv, json (an array of objects) or ndjson; default from the file name' });
  onError = Option.String('--on-error', 'stop', { description: 'stop (default) or skip' });
  upsert = Option.Boolean('--upsert', false, { description: 'A row whose key names an existing record updates it (key: id, or --key)' });
  key = Option.String('--key', { description: 'With --upsert: the unique field that matches rows to records (default id)' });
  strict = Option.Boolean('--strict', false, { description: 'Refuse a file with a column the collection does not have (exit 1, nothing written)' });
  oauth2Links = Option.Boolean('--oauth2-links', false, { description: 'Rows are OAuth2 links {record, provider, providerId} of the auth collection' });
  dataDir = Option.String('--data-dir', { description: 'Data directory (default ./svc_data)' });
  app = Option.String('--app', { description: 'An app module whose features apply (or SERVICE_APP)' });

  protected async run(): Promise<number> {
    const { formatOf, readRows, importRecords, importLinks, importRelationsKnown, fileSize, knownColumns, watchColumns, upsertKeyProblem } = await import('../../src/ops/import.js');
    if (this.onError !== 'stop' && this.onError !== 'skip') return this.fail('usage', '--on-error must be stop or skip');
    if (this.key !== undefined && !this.upsert) return this.fail('usage', '--key goes with --upsert');
    if (this.upsert && this.oauth2Links) return this.fail('usage', '--upsert does not apply to --oauth2-links');
    const format = (this.format ?? formatOf(this.file)) as ImportFormat | undefined;
    if (!format || !['csv', 'json', 'ndjson'].includes(format)) return this.fail('usage', `--format must be csv, json or ndjson${this.format ? '' : ` (the file name ${this.file} does not say)`}`);
    if (!existsSync(this.file)) return this.fail('not_found', `no file ${this.file}`);
    const config = await this.configOrExit(this.dataDir, this.app);
    if (typeof config === 'number') return config;
    let lock;
    try {
      lock = acquireDataDirLock(config.dataDir, { ignore: false });
    } catch (err) {
      if (!(err instanceof LockError)) throw err;
      // no import through a running server: its caches would miss the rows (docs/operations.md, "Bulk import")
      const how = `stop the server (pid ${err.pid ?? '?'}) and run svc import again, or create the rows through the running server's REST API: POST /api/collections/${this.collection}/records, one request per row, as a superuser`;
      return this.fail('lock', `${err.message}; to import: ${how}`, { data_dir: err.dataDir, pid: err.pid });
    }
    const logger = bootstrapLogger(this.context.env, (line) => this.context.stderr.write(`${line}\n`));
    const { openDataDir } = await import('../../src/boot/open-data.js');
    const { buildServices } = await import('../../src/boot/services.js');
    const { importRepository } = await import('../../src/boot/repositories.js');
    let data;
    try {
      data = await openDataDir(config, logger, 0);
    } catch (err) {
      lock.release();
      return this.fail('open_failed', err instanceof Error ? err.message : String(err));
    }
    // the server's services, so an --app's record hooks fire for every imported row (docs/framework.md, "Hooks")
    const app = await (await import('../load-app.js')).loadApp(this.app ?? this.context.env.SERVICE_APP);
    const repo = importRepository(data.store);
    const relations = importRelationsKnown(repo);
    const services = await buildServices(config, logger, data, app ?? null, relations.known);
    try {
      const c = data.store.registry.find(this.collection);
      if (!c) return this.fail('not_found', `no collection "${this.collection}"`);
      if (this.oauth2Links && c.type !== 'auth') return this.fail('usage', `--oauth2-links needs an auth collection; "${c.name}" is ${c.type}`);
      const keyProblem = this.upsert ? upsertKeyProblem(c, this.key ?? 'id') : null;
      if (keyProblem) return this.fail('usage', `--key=${this.key}: ${keyProblem}`);
      // a column the collection does not have is dropped, as the API drops it: said once per column
      const known = knownColumns(c);
      const unknown: { column: string; row: number }[] = [];
      if (this.strict && !this.oauth2Links) {
        // read the whole file first, so nothing is written when a column is unknown
        for await (const _ of watchColumns(readRows(this.file, format, c), known, (column, row) => unknown.push({ column, row }))) { /* reading only */ }
        if (unknown.length) {
          for (const u of unknown) this.note(`column "${u.column}" (first in row ${u.row}) is not a field of ${c.name}`);
          return this.fail('unknown_columns', `--strict: ${unknown.length} column(s) ${c.name} does not have: ${unknown.map((u) => u.column).join(', ')}; nothing was imported`, { columns: unknown.map((u) => u.column) });
        }
      }
      const total = fileSize(this.file);
      let bytes = 0;
      const started = performance.now();
      const tty = !!(this.context.stderr as NodeJS.WriteStream).isTTY;
      let shown = 0;
      const progress = (imported: number, skipped: number, final = false) => {
        if (!tty) return;
        const now = performance.now();
        if (!final && now - shown < 200) return;
        shown = now;
        const s = (now - started) / 1000;
        const rate = imported / Math.max(s, 0.001);
        const left = bytes > 0 ? (s * (total - bytes)) / bytes : 0;
        const pct = total ? Math.min(100, Math.round((100 * bytes) / total)) : 0;
        this.context.stderr.write(`\r${imported.toLocaleString('en')} imported, ${skipped} skipped, ${Math.round(rate).toLocaleString('en')} rows/s, ${pct}%${final ? '' : `, ETA ${Math.ceil(left)} s`}   ${final ? '\n' : ''}`);
      };
      const read = readRows(this.file, format, this.oauth2Links ? null : c, (b) => (bytes = b));
      const rows = this.oauth2Links ? read : watchColumns(read, known, (column, row) => this.note(`svc: warning: column "${column}" (first in row ${row}) is not a field of ${c.name}: its values are dropped (--strict refuses the file)`));
      const opts = { onError: this.onError as 'stop' | 'skip', onProgress: (i: number, k: number) => progress(i, k), upsert: this.upsert ? { key: this.key ?? 'id' } : undefined, relations };
      let result: ImportResult;
      try {
        result = this.oauth2Links ? await importLinks(repo, c, rows, opts) : await importRecords(repo, services.ctx.writes, c, rows, opts);
      } catch (err) {
        return this.fail('import_failed', `reading ${this.file}: ${err instanceof Error ? err.message : String(err)}`);
      }
      progress(result.imported, result.skipped, true);
      const seconds = (performance.now() - started) / 1000;
      for (const e of result.errors) this.note(`row ${e.row}: ${e.message}${e.data ? ` ${JSON.stringify(e.data)}` : ''}`);
      if (result.skipped > result.errors.length) this.note(`… and ${result.skipped - result.errors.length} more refused row(s)`);
      const summary = {
        collection: c.name, imported: result.imported, ...(this.upsert ? { updated: result.updated } : {}), skipped: result.skipped, stopped: result.stopped,
        seconds: Math.round(seconds * 1000) / 1000, rows_per_second: Math.round(result.imported / Math.max(seconds, 0.001)), errors: result.errors,
      };
      const text = `${result.imported} row(s) imported into ${c.name}${this.upsert ? ` (${result.updated} updated)` : ''}${result.skipped ? `, ${result.skipped} refused` : ''}${result.stopped ? ' (stopped at the first refused row; use --on-error=skip to import the rest)' : ''} in ${summary.seconds} s`;
      if (result.stopped) {
        if (this.json) this.context.stdout.write(`${JSON.stringify({ error: { code: 'row_refused', message: text, ...summary } })}\n`);
        this.note(`svc: ${text}`);
        return 1;
      }
      this.emit(summary, text);
      return result.skipped ? 3 : 0;
    } finally {
      await services.close();
      await data.close();
      lock.release();
    }
  }
}
