/**
 * Shared flow of `svc superuser create` and `svc superuser upsert` (docs/configuration.md,
 * "Server"; docs/operations.md, "Command line").
 *
 * Validates the shared log settings (an invalid SERVICE_LOG_* value is reported and exits 1, as
 * for every command that loads config), resolves the data directory, then hands off to the domain
 * module. ApiError (invalid email, short password, …) exits 1 with its message and field errors;
 * under --json the error object is `{error: {code, message, data}}`.
 */
import { Option } from 'clipanion';
import { SvcCommand } from '../../base-command.js';
import { importSuperuserAdmin, type SuperuserAdmin, type SuperuserResult } from '../../app-modules.js';
import type { FieldError } from '../../../src/errors/api-error.js';

/** ApiError by shape, so an error from a second copy of the module still counts. */
function isApiError(err: unknown): err is Error & { status: number; code: string; data: Record<string, FieldError> } {
  return err instanceof Error && typeof (err as { status?: unknown }).status === 'number'
    && typeof (err as { code?: unknown }).code === 'string';
}

export abstract class SuperuserCommand extends SvcCommand {
  email = Option.String('--email', { required: true, description: 'Superuser email address' });
  password = Option.String('--password', { required: true, description: 'Superuser password' });
  dataDir = Option.String('--data-dir', { description: 'Data directory (default ./svc_data)' });

  /** The domain call this command makes. */
  protected abstract apply(admin: SuperuserAdmin, dataDir: string): Promise<SuperuserResult>;

  protected async run(): Promise<number> {
    const dataDir = this.dataDirOrExit(this.dataDir);
    if (typeof dataDir === 'number') return dataDir;

    const admin = await (this.context.loadSuperuserAdmin ?? importSuperuserAdmin)();
    let result: SuperuserResult;
    try {
      result = await this.apply(admin, dataDir);
    } catch (err) {
      if (!isApiError(err)) throw err;
      const data = err.data ?? {};
      for (const [field, fe] of Object.entries(data)) this.note(`  ${field}: ${fe.message} (${fe.code})`);
      return this.fail(err.code, err.message, { data });
    }
    const verb = result.created ? 'created' : 'updated';
    this.emit(
      { id: result.id, email: result.email, created: result.created },
      `superuser ${result.email} ${verb} (id ${result.id}) in ${dataDir}`,
    );
    return 0;
  }
}
