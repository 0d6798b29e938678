/**
 * `svc schema dump [--out=FILE]`, `svc schema apply FILE [--dry-run] [--allow-drop]` and
 * `svc typegen [--out=FILE]` (docs/operations.md, "Command line", "Schema as code" and "Types for
 * client code"; src/ops/schema.ts, src/ops/typegen.ts).
 *
 * - `dump` writes the collections as JSON (stdout, or FILE); it only reads, so it runs beside a
 *   running server.
 * - `apply --dry-run` prints the plan; exit 0 when there is nothing to do, 2 when there are
 *   changes (a human or a deploy script judges them). It only reads.
 * - `apply` makes the database match the file, with the data directory locked (refused while a
 *   server holds it: the server's schema would go stale). A plan that drops data (a collection or
 *   field the file leaves out) is refused (exit 1, nothing applied) unless `--allow-drop`.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { Command, Option } from 'clipanion';
import { SvcCommand } from '../base-command.js';
import type { ServeConfig } from '../../src/config/config.js';
import { acquireDataDirLock, LockError } from '../../src/config/data-dir-lock.js';
import { databasePath } from '../../src/files/data-paths.js';
import { bootstrapLogger } from '../../src/log/logger.js';
import { knownApiError } from '../../src/errors/api-error.js';
import type { PlanItem, SchemaDocument } from '../../src/ops/schema.js';

/** Shared: --data-dir, --app, the config and a read-only view of the schema. */
abstract class SchemaBase extends SvcCommand {
  dataDir = Option.String('--data-dir', { description: 'Data directory (default ./svc_data)' });
  app = Option.String('--app', { description: 'An app module whose features apply (or SERVICE_APP)' });

  /** The config (the app's features added), or an exit code after reporting why not. */
  protected config(): Promise<ServeConfig | number> {
    return this.configOrExit(this.dataDir, this.app);
  }

  /** The stored collections, read without writing anything (works beside a running server). */
  protected async readRegistry(config: ServeConfig) {
    if (config.databaseUrl) {
      // the server-SQL backend: the definitions in its `_collections` (src/store/pg/)
      const [{ PgReader }, { pgStores }, { CollectionRegistry }] = await Promise.all([
        import('../../src/store/pg/reader.js'), import('../../src/store/pg/sql-stores.js'), import('../../src/collections/collection-registry.js'),
      ]);
      const reader = await PgReader.start(config.databaseUrl, { poolSize: 1, applicationName: 'svc-cli' });
      try {
        const registry = new CollectionRegistry();
        // a database no server has started on yet has no system tables: no collections
        if ((await reader.get(`SELECT to_regclass('"_collections"')::text`, []))?.[0]) registry.load(await pgStores(reader).schema.loadAll());
        return registry;
      } finally {
        await reader.close();
      }
    }
    const [{ Reader }, { sqliteStores }, { CollectionRegistry }] = await Promise.all([
      import('../../src/store/sqlite/reader.js'), import('../../src/store/sqlite/sql-stores.js'), import('../../src/collections/collection-registry.js'),
    ]);
    const reader = new Reader(databasePath(config.dataDir), 0);
    try {
      const registry = new CollectionRegistry();
      registry.load(await sqliteStores(reader).schema.loadAll());
      return registry;
    } finally {
      await reader.close();
    }
  }

  /**
   * Writes `text` to `out` (noting what, and under --json printing `{out, collections}`), or to
   * stdout (`json` instead under --json). Exit 0.
   */
  protected output(out: string | undefined, text: string, json: unknown, collections: number, what: string): number {
    if (out) {
      writeFileSync(out, text);
      this.note(`wrote ${collections} ${what} to ${out}`);
      if (this.json) this.context.stdout.write(`${JSON.stringify({ out, collections })}\n`);
      return 0;
    }
    this.context.stdout.write(this.json ? `${JSON.stringify(json)}\n` : text);
    return 0;
  }

  protected hasDatabase(config: ServeConfig): boolean {
    return !!config.databaseUrl || existsSync(databasePath(config.dataDir));
  }
}

export class SchemaDumpCommand extends SchemaBase {
  static paths = [['schema', 'dump']];
  static usage = Command.Usage({
    description: 'Write the collections as JSON (stable order, diff-friendly)',
    examples: [['To a file', '$0 schema dump --out=schema.json'], ['Check for drift', '$0 schema apply schema.json --dry-run']],
  });
  out = Option.String('--out', { description: 'Write to FILE instead of stdout' });

  protected async run(): Promise<number> {
    const config = await this.config();
    if (typeof config === 'number') return config;
    if (!this.hasDatabase(config)) return this.fail('not_found', `no database in ${config.dataDir}`);
    const { dumpSchema } = await import('../../src/ops/schema.js');
    const doc = dumpSchema({ registry: await this.readRegistry(config) });
    return this.output(this.out, `${JSON.stringify(doc, null, 2)}\n`, doc, doc.collections.length, 'collection(s)');
  }
}

/**
 * `svc typegen [--out=FILE]` (docs/operations.md, "Types for client code"): TypeScript types of
 * every collection (src/ops/typegen.ts), from the database as `schema dump` reads it (beside a
 * running server too).
 */
export class TypegenCommand extends SchemaBase {
  static paths = [['typegen']];
  static usage = Command.Usage({
    description: 'Write TypeScript types for every collection (records, create and update shapes, expand)',
    examples: [['To a file in your app', '$0 typegen --out=src/svc-types.ts']],
  });
  out = Option.String('--out', { description: 'Write to FILE instead of stdout' });

  protected async run(): Promise<number> {
    const config = await this.config();
    if (typeof config === 'number') return config;
    if (!this.hasDatabase(config)) return this.fail('not_found', `no database in ${config.dataDir}`);
    const { generateTypes } = await import('../../src/ops/typegen.js');
    const collections = (await this.readRegistry(config)).all().filter((c) => !c.system);
    const text = generateTypes(collections);
    return this.output(this.out, text, { types: text, collections: collections.length }, collections.length, 'collection(s)\' types');
  }
}

function planText(plan: PlanItem[]): string {
  if (!plan.length) return 'nothing to do: the database matches the file';
  return plan.map((p) => `${p.action.padEnd(6)} ${p.collection}${p.destructive ? '  (drops data)' : ''}\n${p.changes.map((c) => `         - ${c}`).join('\n')}`).join('\n');
}

export class SchemaApplyCommand extends SchemaBase {
  static paths = [['schema', 'apply']];
  static usage = Command.Usage({
    description: 'Make the database match a schema file',
    details: 'Collections and fields are matched by id, then by name: a rename keeps the data. A plan that drops a collection or a field is applied only with --allow-drop. --dry-run prints the plan and exits 0 when there is nothing to do, 2 when there are changes.',
  });
  file = Option.String({ required: true, name: 'FILE' });
  dryRun = Option.Boolean('--dry-run', false, { description: 'Print the plan; change nothing' });
  allowDrop = Option.Boolean('--allow-drop', false, { description: 'Apply changes that drop collections or fields (their data is lost)' });

  protected async run(): Promise<number> {
    const config = await this.config();
    if (typeof config === 'number') return config;
    let doc: SchemaDocument;
    const schema = await import('../../src/ops/schema.js');
    try {
      doc = schema.checkDocument(JSON.parse(readFileSync(this.file, 'utf8')));
    } catch (err) {
      return this.fail('invalid_schema', `${this.file}: ${err instanceof Error ? err.message : String(err)}`);
    }
    if (this.dryRun) {
      let plan: PlanItem[];
      try {
        const { CollectionRegistry } = await import('../../src/collections/collection-registry.js');
        plan = schema.planSchema({ registry: this.hasDatabase(config) ? await this.readRegistry(config) : new CollectionRegistry() }, doc);
      } catch (err) {
        return this.failApply(err);
      }
      this.emit({ plan, changes: plan.length, destructive: plan.some((p) => p.destructive), applied: false }, planText(plan));
      return plan.length ? 2 : 0;
    }
    let lock;
    try {
      lock = acquireDataDirLock(config.dataDir, { ignore: false });
    } catch (err) {
      if (!(err instanceof LockError)) throw err;
      return this.fail('lock', `${err.message} (stop the server to apply a schema; use --dry-run to see the plan now)`, { data_dir: err.dataDir, pid: err.pid });
    }
    const write = (line: string) => this.context.stderr.write(`${line}\n`);
    const logger = bootstrapLogger(this.context.env, write);
    const { openDataDir } = await import('../../src/boot/open-data.js');
    const { CollectionsService } = await import('../../src/collections/collections-service.js');
    const { collectionsRepository } = await import('../../src/boot/repositories.js');
    let data;
    try {
      data = await openDataDir(config, logger, 0);
    } catch (err) {
      lock.release();
      return this.fail('open_failed', err instanceof Error ? err.message : String(err));
    }
    try {
      let plan: PlanItem[];
      try {
        plan = schema.planSchema(data.store, doc);
      } catch (err) {
        return this.failApply(err);
      }
      if (plan.some((p) => p.destructive) && !this.allowDrop) {
        this.note(planText(plan));
        return this.fail('destructive_change', 'the plan drops data (marked "drops data" above); nothing was applied. Pass --allow-drop to apply it', { plan });
      }
      try {
        await schema.applySchema(data.store, new CollectionsService(collectionsRepository(data.store), data.files), doc, this.allowDrop);
      } catch (err) {
        return this.failApply(err);
      }
      this.emit({ plan, changes: plan.length, destructive: plan.some((p) => p.destructive), applied: true }, `${planText(plan)}\n${plan.length ? `applied ${plan.length} change(s)` : ''}`);
      return 0;
    } finally {
      await data.close();
      lock.release();
    }
  }

  private failApply(thrown: unknown): number {
    const err = knownApiError(thrown);
    if (err) {
      return this.fail(err.code === 'validation_failed' || err.code === 'bad_request' ? 'invalid_schema' : err.code, err.message, Object.keys(err.data).length ? { data: err.data } : {});
    }
    throw thrown;
  }
}
