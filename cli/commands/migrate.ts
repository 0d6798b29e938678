/**
 * `svc migrate`, `svc migrate status`, `svc migrate preview` (docs/operations.md, "Command line";
 * docs/framework.md: `migrations`, `--app`).
 *
 * - `migrate` applies the app's pending migrations in order (each in one transaction with the row
 *   recording it) with the data directory locked: refused (exit 1) while a server holds it, since
 *   `serve` applies pending migrations itself before it opens its port.
 * - `migrate status` compares the declared migrations with the applied ones; exit 0 only when
 *   nothing is pending or orphaned, text and JSON alike, so it can gate a deploy.
 * - `migrate preview` lists the declared migrations from the app definition alone (no database,
 *   no configuration, no migration code run); it needs the `dev-tools` feature.
 */
import { Command, Option } from 'clipanion';
import { SvcCommand } from '../base-command.js';
import { loadApp } from '../load-app.js';
import { ConfigError, loadFeatures } from '../../src/config/config.js';
import { acquireDataDirLock, LockError } from '../../src/config/data-dir-lock.js';
import { createDatabaseFile, databasePath, ensureDataDir } from '../../src/files/data-paths.js';
import type { App } from '../../src/app/app.js';
import { appDatabaseUrl, featureNames } from '../../src/app/definition.js';

abstract class MigrateBase extends SvcCommand {
  app = Option.String('--app', { description: 'The app module whose migrations to use (or SERVICE_APP)' });
  dataDir = Option.String('--data-dir', { description: 'Data directory (default ./svc_data)' });

  /**
   * The app, or an exit code after reporting why there is none. With `optional`, no `--app` (nor
   * SERVICE_APP) answers null: `status` and `preview` then read a data directory that declares
   * no migration (every applied one is orphaned; preview's lists are empty).
   */
  protected async theApp(optional = false): Promise<App | null | number> {
    const file = this.app ?? this.context.env.SERVICE_APP;
    if (!file && optional) return null;
    if (!file) return this.fail('usage', 'give the app whose migrations to use: --app=FILE (or SERVICE_APP)');
    try {
      return (await loadApp(file))!;
    } catch (err) {
      return this.fail('app', err instanceof Error ? err.message : String(err));
    }
  }
}

export class MigrateCommand extends MigrateBase {
  static paths = [['migrate'], ['migrate', 'up']];
  static usage = Command.Usage({
    description: "Apply the app's pending migrations",
    details: 'Each migration runs in one transaction with the row that records it. Refused while a server uses the data directory (a server applies pending migrations when it starts).',
    examples: [['Apply', '$0 migrate --app=app.js'], ['Check before a deploy', '$0 migrate status --app=app.js --json']],
  });

  protected async run(): Promise<number> {
    const app = await this.theApp();
    if (typeof app === 'number' || !app) return app ?? 1;
    const dataDir = this.dataDirOrExit(this.dataDir);
    if (typeof dataDir === 'number') return dataDir;
    let lock;
    try {
      ensureDataDir(dataDir);
      lock = acquireDataDirLock(dataDir, { ignore: false });
    } catch (err) {
      if (!(err instanceof LockError)) throw err;
      return this.fail('lock', `${err.message} (stop the server first; it applies pending migrations when it starts)`, { data_dir: err.dataDir, pid: err.pid });
    }
    try {
      createDatabaseFile(dataDir);
      const { loadMigrations } = await import('../../src/app/migrations.js');
      const { applyMigrations } = await import('../../src/store/sqlite/migrations-sql.js');
      const applied: { id: string; ms: number }[] = [];
      const onApplied = (id: string, ms: number) => {
        applied.push({ id, ms });
        this.note(`applied ${id} (${Math.round(ms)} ms)`);
      };
      try {
        // SERVICE_DATABASE_URL: the server-SQL backend's database (src/store/pg/migrations-sql.ts)
        const url = process.env.SERVICE_DATABASE_URL?.trim() || appDatabaseUrl(app);
        if (url) await (await import('../../src/store/pg/migrations-sql.js')).applyMigrationsPg(url, await loadMigrations(app.migrations), onApplied);
        else await applyMigrations(databasePath(dataDir), await loadMigrations(app.migrations), onApplied);
      } catch (err) {
        const id = (err as { migrationId?: string }).migrationId;
        return this.fail('migration_failed', err instanceof Error ? err.message : String(err), { applied: applied.map((a) => a.id), failed: id ?? null });
      }
      this.emit({ applied: applied.map((a) => a.id), data_dir: dataDir }, applied.length ? `applied ${applied.length} migration(s)` : 'nothing to apply');
      return 0;
    } finally {
      lock.release();
    }
  }
}

export class MigrateStatusCommand extends MigrateBase {
  static paths = [['migrate', 'status']];
  static usage = Command.Usage({
    description: 'Show applied, pending and orphaned migrations; exit 0 only when nothing is pending or orphaned',
    details: 'Without --app (or SERVICE_APP) nothing is declared, so every applied migration is listed as orphaned.',
  });

  protected async run(): Promise<number> {
    const app = await this.theApp(true);
    if (typeof app === 'number') return app;
    const dataDir = this.dataDirOrExit(this.dataDir);
    if (typeof dataDir === 'number') return dataDir;
    const { declaredMigrationIds, migrationStatus } = await import('../../src/app/migrations.js');
    const { existsSync } = await import('node:fs');
    const db = databasePath(dataDir);
    const declared = declaredMigrationIds(app?.migrations);
    const url = process.env.SERVICE_DATABASE_URL?.trim() || (app ? appDatabaseUrl(app) : undefined);
    const recorded = url
      ? await (await import('../../src/store/pg/migrations-sql.js')).appliedMigrationsPg(url)
      : existsSync(db) ? await (await import('../../src/store/sqlite/migrations-sql.js')).appliedMigrations(db) : [];
    const status = migrationStatus(declared, recorded);
    const lines = [
      ...status.migrations.map((m) => `${m.applied ? 'applied ' : 'pending '} ${m.id}${m.applied_at ? `  ${m.applied_at}` : ''}`),
      ...status.orphaned.map((m) => `orphaned ${m.id}  ${m.applied_at}  (applied, no longer declared)`),
      `${status.summary.declared} declared, ${status.summary.applied} applied, ${status.summary.pending} pending, ${status.summary.orphaned} orphaned: ${status.ok ? 'ok' : 'NOT ok'}`,
    ];
    this.emit(status, lines.join('\n'));
    return status.ok ? 0 : 1;
  }
}

export class MigratePreviewCommand extends MigrateBase {
  static paths = [['migrate', 'preview']];
  static usage = Command.Usage({
    description: "List the app's declared migrations without touching a database (needs the dev-tools feature)",
    details: 'Without --app (or SERVICE_APP) nothing is declared: the lists are empty.',
  });

  protected async run(): Promise<number> {
    const app = await this.theApp(true);
    if (typeof app === 'number') return app;
    let features;
    try {
      features = loadFeatures({}, this.context.env);
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      return this.failConfig(err);
    }
    for (const f of featureNames(app?.features)) features.add(f);
    if (!features.has('dev-tools')) return this.fail('unavailable', 'migrate preview needs the dev-tools feature: features: { devTools: true } in the app, or SERVICE_FEATURES=dev-tools');
    const { migrationPreview } = await import('../../src/app/migrations.js');
    const preview = migrationPreview(app?.migrations);
    this.emit(preview, [...preview.items.map((i) => `${i.id} (${i.kind})`), ...preview.unknown.map((u) => `unknown file: ${u}`), `${preview.items.length} migration(s)`].join('\n'));
    return 0;
  }
}
