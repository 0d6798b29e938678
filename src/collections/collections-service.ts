/**
 * Collection management (superuser only): create, update, delete. Each change is validated in
 * full (fields, indexes, options, every rule against the proposed schema and every retained
 * collection) before one write job migrates the table; the registry is updated after the commit.
 * Changes are serialized so each one is computed against the schema it will apply to.
 */
import { ApiError } from '../errors/api-error.js';
import type { Collection } from '../model/schema.js';
import type { Store } from '../context/store.js';
import { buildCollection, checkRules } from './collection-input.js';
import type { WriteStep } from '../store/write-job.js';
import { bindValue } from '../store/bind.js';
import type { RecordFiles } from '../files/record-files.js';
import { migrateEncryption } from '../records/encryption-migration.js';

export class CollectionsService {
  private chain: Promise<unknown> = Promise.resolve();

  /** `files`: deletes a collection's stored files with it, and files of dropped file fields. */
  constructor(private store: Store, private files?: RecordFiles) {}

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.chain.then(fn, fn);
    this.chain = run.catch(() => undefined);
    return run;
  }

  create(body: unknown): Promise<Collection> {
    return this.serial(async () => {
      const before = this.store.registry.all();
      const next = buildCollection(body, undefined, before);
      await this.apply(this.store.sql.schema.createSteps(next, before, [...before, next]));
      this.store.registry.put(next);
      return next;
    });
  }

  update(idOrName: string, body: unknown): Promise<Collection> {
    return this.serial(async () => {
      const prev = this.store.collection(idOrName);
      const before = this.store.registry.all();
      const others = before.filter((c) => c.id !== prev.id);
      const next = buildCollection(body, prev, others);
      const after = [...others, next];
      await this.apply(this.store.sql.schema.updateSteps(prev, next, before, after));
      this.store.registry.put(next);
      await migrateEncryption(this.store, prev, next);
      if (this.files && prev.fields.some((f) => f.type === 'file' && !next.fields.some((n) => n.id === f.id))) await this.files.sweep(next);
      return next;
    });
  }

  delete(idOrName: string): Promise<void> {
    return this.serial(async () => {
      const c = this.store.collection(idOrName);
      if (c.system) throw ApiError.badRequest('System collections cannot be deleted.');
      const before = this.store.registry.all();
      const after = before.filter((x) => x.id !== c.id);
      const referrers = after.filter((x) => x.fields.some((f) => f.type === 'relation' && f.options.collectionId === c.id));
      if (referrers.length) {
        throw ApiError.badRequest(`The collection is the target of a relation field in: ${referrers.map((x) => x.name).join(', ')}. Remove those fields first.`);
      }
      checkRules(null, after);
      await this.apply(this.store.sql.schema.deleteSteps(c, before, after));
      this.store.registry.remove(c.id);
      await this.files?.storage.removeCollection(c.id);
    });
  }

  private async apply(steps: WriteStep[]): Promise<void> {
    for (const s of steps) s.params = s.params.map(bindValue);
    try {
      await this.store.writer.write(steps);
    } catch (err) {
      const failure = this.store.sql.dialect.writeFailure(err);
      if (failure) {
        if (failure.constraint) throw ApiError.badRequest(`The schema change conflicts with existing data: ${failure.message}`);
        throw ApiError.badRequest(`The schema change could not be applied: ${failure.message}`);
      }
      throw err;
    } finally {
      this.store.schemaChanged();
    }
  }
}
