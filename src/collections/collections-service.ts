/**
 * Collection management (superuser only): create, update, delete. Each change is validated in
 * full (fields, indexes, options, every rule against the proposed schema and every retained
 * collection) before one write job migrates the table; the registry is updated after the commit.
 * Changes are serialized so each one is computed against the schema it will apply to.
 */
import { ApiError } from '../errors/api-error.js';
import type { Collection } from '../model/schema.js';
import type { CollectionRegistry } from './collection-registry.js';
import type { SchemaStore } from '../store/schema-store.js';
import type { Dialect } from '../store/dialect.js';
import { buildCollection, checkRules } from './collection-input.js';
import type { StepResult, WriteStep } from '../store/write-job.js';
import { bindValue } from '../store/bind.js';
import type { RecordFiles } from '../files/record-files.js';

/**
 * What CollectionsService needs instead of the whole Store (src/context/store.ts; ARCHITECTURE.md,
 * "Folders"): the registry it reads and updates after each commit, the schema statements of a
 * create, update or delete, the writer, the dialect's reading of a failed write, the reader's
 * reset after a schema change, and the re-write of the values whose encryption an update toggled
 * (migrateEncryption of src/records/encryption-migration.ts, bound to the store by the
 * composition root: collectionsRepository, src/boot/repositories.ts).
 */
export interface CollectionsRepository {
  registry: Pick<CollectionRegistry, 'all' | 'put' | 'remove'>;
  /** The collection by id or name (Store.collection). @throws NotFound (the API answers 404) when there is none */
  collection(idOrName: string): Collection;
  schema: Pick<SchemaStore, 'createSteps' | 'updateSteps' | 'deleteSteps'>;
  dialect: Pick<Dialect, 'writeFailure'>;
  /**
   * Runs `steps` as one write job, in one transaction (SqlWriter.write of src/store/backend.ts).
   * @throws the backend's write error (read with `dialect.writeFailure`)
   */
  write(steps: WriteStep[]): Promise<StepResult[]>;
  /** After a schema change: drop cached statements and plans (Store.schemaChanged). */
  schemaChanged(): void;
  /** Re-writes the stored values of the fields whose encryption `prev` → `next` toggled; resolves the number of rows changed. */
  migrateEncryption(prev: Collection, next: Collection): Promise<number>;
}

export class CollectionsService {
  private chain: Promise<unknown> = Promise.resolve();

  /** `files`: deletes a collection's stored files with it, and files of dropped file fields. */
  constructor(private repo: CollectionsRepository, private files?: RecordFiles) {}

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.chain.then(fn, fn);
    this.chain = run.catch(() => undefined);
    return run;
  }

  create(body: unknown): Promise<Collection> {
    return this.serial(async () => {
      const before = this.repo.registry.all();
      const next = buildCollection(body, undefined, before);
      await this.apply(this.repo.schema.createSteps(next, before, [...before, next]));
      this.repo.registry.put(next);
      return next;
    });
  }

  update(idOrName: string, body: unknown): Promise<Collection> {
    return this.serial(async () => {
      const prev = this.repo.collection(idOrName);
      const before = this.repo.registry.all();
      const others = before.filter((c) => c.id !== prev.id);
      const next = buildCollection(body, prev, others);
      const after = [...others, next];
      await this.apply(this.repo.schema.updateSteps(prev, next, before, after));
      this.repo.registry.put(next);
      await this.repo.migrateEncryption(prev, next);
      if (this.files && prev.fields.some((f) => f.type === 'file' && !next.fields.some((n) => n.id === f.id))) await this.files.sweep(next);
      return next;
    });
  }

  delete(idOrName: string): Promise<void> {
    return this.serial(async () => {
      const c = this.repo.collection(idOrName);
      if (c.system) throw ApiError.badRequest('System collections cannot be deleted.');
      const before = this.repo.registry.all();
      const after = before.filter((x) => x.id !== c.id);
      const referrers = after.filter((x) => x.fields.some((f) => f.type === 'relation' && f.options.collectionId === c.id));
      if (referrers.length) {
        throw ApiError.badRequest(`The collection is the target of a relation field in: ${referrers.map((x) => x.name).join(', ')}. Remove those fields first.`);
      }
      checkRules(null, after);
      await this.apply(this.repo.schema.deleteSteps(c, before, after));
      this.repo.registry.remove(c.id);
      await this.files?.storage.removeCollection(c.id);
    });
  }

  private async apply(steps: WriteStep[]): Promise<void> {
    for (const s of steps) s.params = s.params.map(bindValue);
    try {
      await this.repo.write(steps);
    } catch (err) {
      const failure = this.repo.dialect.writeFailure(err);
      if (failure) {
        if (failure.constraint) throw ApiError.badRequest(`The schema change conflicts with existing data: ${failure.message}`);
        throw ApiError.badRequest(`The schema change could not be applied: ${failure.message}`);
      }
      throw err;
    } finally {
      this.repo.schemaChanged();
    }
  }
}
