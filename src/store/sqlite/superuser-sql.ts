/**
 * The CLI's superuser write (implements SuperuserAdminStore, src/store/auth-store.ts) on its own
 * libsql connection: WAL and a 10 s busy timeout serialize it with a running server's writer.
 */
import Database from 'libsql';
import type { SuperuserAdminStore } from '../auth-store.js';
import { bindAll } from '../bind.js';
import { bootstrapSteps } from './bootstrap.js';

export const saveSuperuser: SuperuserAdminStore = (dbPath, w, mode) => {
  const db = new Database(dbPath);
  try {
    db.exec('PRAGMA busy_timeout = 10000');
    db.exec('PRAGMA journal_mode = WAL');
    db.exec('BEGIN IMMEDIATE');
    try {
      for (const s of bootstrapSteps()) db.prepare(s.sql).run(bindAll(s.params));
      const existing = db.prepare('SELECT "id", "email" FROM "_superusers" WHERE "email" = ? COLLATE NOCASE').raw(true).get([w.email]) as unknown[] | undefined;
      let result: ReturnType<SuperuserAdminStore>;
      if (existing) {
        if (mode === 'create') {
          db.exec('ROLLBACK');
          return 'exists';
        }
        db.prepare('UPDATE "_superusers" SET "passwordHash" = ?, "tokenKey" = ?, "updated" = ? WHERE "id" = ?').run([w.passwordHash, w.tokenKey, w.now, existing[0] as string]);
        result = { id: String(existing[0]), email: String(existing[1]), created: false };
      } else {
        db.prepare('INSERT INTO "_superusers" ("id","created","updated","email","emailVisibility","verified","passwordHash","tokenKey","token_epoch") VALUES (?,?,?,?,0,1,?,?,0)')
          .run([w.newId, w.now, w.now, w.email, w.passwordHash, w.tokenKey]);
        result = { id: w.newId, email: w.email, created: true };
      }
      db.exec('COMMIT');
      return result;
    } catch (err) {
      db.exec('ROLLBACK');
      throw err;
    }
  } finally {
    db.close();
  }
};
