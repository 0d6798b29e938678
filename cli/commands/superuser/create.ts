/** `svc superuser create --email=E --password=P [--data-dir=DIR] [--json]`: adds a superuser. */
import { Command } from 'clipanion';
import { SuperuserCommand } from './superuser-command.js';
import type { SuperuserAdmin, SuperuserResult } from '../../app-modules.js';

export class SuperuserCreateCommand extends SuperuserCommand {
  static paths = [['superuser', 'create']];
  static usage = Command.Usage({
    category: 'Superusers',
    description: 'Create a superuser',
    details: 'Fails if a superuser with this email already exists; use `superuser upsert` to change its password.',
    examples: [['Create the first superuser', '$0 superuser create --email=admin@example.com --password=change-me-now']],
  });

  protected apply(admin: SuperuserAdmin, dataDir: string): Promise<SuperuserResult> {
    return admin.createSuperuser(dataDir, this.email, this.password);
  }
}
