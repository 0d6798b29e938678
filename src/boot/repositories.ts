/**
 * The narrow repositories the feature services take instead of the whole `Store` (ARCHITECTURE.md,
 * "Folders": `src/boot/`): each function hands out only the statements and capabilities one
 * feature uses, so its dependencies show in its constructor's type and a test can give it a small
 * fake. Each is built over the Store of the open database (src/context/store.ts); the types are
 * declared beside the features that take them.
 */
import type { Store } from '../context/store.js';
import type { MailRepository } from '../mail/mail-queue.js';

/** The mail queue's and the sender identities' repository: `store.sql.mail` and the writer. */
export function mailRepository(store: Store): MailRepository {
  return { rows: store.sql.mail, write: (steps) => store.writer.write(steps) };
}
