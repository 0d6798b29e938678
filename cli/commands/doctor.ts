/**
 * `svc doctor [--data-dir=DIR] [--app=FILE] [--json]` (docs/operations.md, "Command line";
 * under `--json`, one object per finding `{check_id, severity, message, fix}`
 * then a summary object; docs/operations.md, "Doctor").
 *
 * Reads the data directory without its lock (it runs beside a server) and reports what needs an
 * operator's attention; the checks are in src/ops/doctor.ts. With SERVICE_DATABASE_URL (or the
 * `--app` definition's `database`) it reads that PostgreSQL database instead of data.db
 * (src/ops/doctor-pg.ts).
 *
 * Output: text, one line per finding (`[warning] check-id: message — fix: …`) then a summary
 * line; under `--json`, one finding object per line then `{summary: {errors, warnings, infos,
 * checks_run}}`. Exit codes: 0 when every finding is info (or there is none); 2 when a finding is
 * a warning or an error (it needs human judgment); 1 when the doctor itself fails (a usage or
 * config error, no data directory, an unreadable database), with `{error: {code, message}}` as
 * the only object on stdout under `--json`.
 */
import { Command, Option } from 'clipanion';
import { SvcCommand } from '../base-command.js';
import { loadApp } from '../load-app.js';
import { appDatabaseUrl } from '../../src/app/definition.js';

export class DoctorCommand extends SvcCommand {
  static paths = [['doctor']];
  static usage = Command.Usage({
    description: 'Check a data directory for risky settings and slow queries',
    details: 'Read-only, and safe while a server runs. Checks: public write rules, open signup, loose file modes, no superuser, missing indexes (from the slow-query log), the WAL size, the encryption key backup and the token secret. Exit 0 when nothing needs judgment, 2 when a finding does, 1 when the check itself fails.',
    examples: [['Check ./svc_data', '$0 doctor'], ['As a JSON findings stream', '$0 doctor --data-dir=/srv/svc --json']],
  });

  dataDir = Option.String('--data-dir', { description: 'Data directory (default ./svc_data)' });
  app = Option.String('--app', { description: "The app module whose declared collections count (or SERVICE_APP)" });

  protected async run(): Promise<number> {
    const env = this.context.env;
    const dataDir = this.dataDirOrExit(this.dataDir);
    if (typeof dataDir === 'number') return dataDir;
    let declared: readonly Record<string, unknown>[] = [];
    let databaseUrl = env.SERVICE_DATABASE_URL?.trim() || undefined;
    const appFile = this.app ?? env.SERVICE_APP;
    if (appFile) {
      try {
        const app = await loadApp(appFile);
        declared = (app?.collections ?? []) as unknown as Record<string, unknown>[];
        databaseUrl ??= appDatabaseUrl(app);
      } catch (err) {
        return this.fail('app', err instanceof Error ? err.message : String(err));
      }
    }

    const { runDoctor, summarize, exitCode, DoctorError } = await import('../../src/ops/doctor.js');
    let report;
    try {
      report = await runDoctor({ dataDir, env, declared, databaseUrl });
    } catch (err) {
      if (err instanceof DoctorError) return this.fail(err.code, err.message, { data_dir: dataDir });
      throw err;
    }
    const summary = summarize(report);
    if (this.json) {
      let out = '';
      for (const f of report.findings) out += `${JSON.stringify({ check_id: f.check_id, severity: f.severity, message: f.message, fix: f.fix })}\n`;
      out += `${JSON.stringify({ summary })}\n`;
      this.context.stdout.write(out);
    } else {
      const lines = report.findings.map((f) => `[${f.severity}] ${f.check_id}: ${f.message} — fix: ${f.fix}`);
      const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
      lines.push(`${plural(summary.errors, 'error')}, ${plural(summary.warnings, 'warning')}, ${plural(summary.infos, 'info')} (${summary.checks_run} checks on ${report.target ?? dataDir})`);
      this.context.stdout.write(`${lines.join('\n')}\n`);
    }
    return exitCode(report);
  }
}
