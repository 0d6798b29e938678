/** `svc superuser upsert --email=E --password=P [--data-dir=DIR] [--json]`: creates or re-passwords. */
import { Command } from 'clipanion';
import { SuperuserCommand } from './superuser-command.js';
import type { SuperuserAdmin, SuperuserResult } from '../../app-modules.js';

export class SuperuserUpsertCommand extends SuperuserCommand {
  static paths = [['superuser', 'upsert']];
  static usage = Command.Usage({
    category: 'Superusers',
    description: 'Create a superuser, or set the password of an existing one',
    examples: [['Reset a superuser password', '$0 superuser upsert --email=admin@example.com --password=new-secret-pw']],
  });

  protected apply(admin: SuperuserAdmin, dataDir: string): Promise<SuperuserResult> {
    return admin.upsertSuperuser(dataDir, this.email, this.password);
  }
}
