/**
 * The file part of a record create or update (docs/api.md, "Records": multipart create and
 * update, files under the field's name; stored under randomized names).
 *
 * For each `file` field the write computes the field's final list of stored names:
 * - `<field>` as values (JSON, or plain form fields in multipart): the existing names to keep
 *   (each must be one of the record's current files, else `validation_value`); `null`, `""` or
 *   `[]` keeps none. Uploads under `<field>` are added after the kept names; uploads without kept
 *   names replace the field's files. With `maxSelect` 1 a new upload always replaces.
 * - uploads under `<field>+` are appended to the current files (PocketBase's modifier).
 * - `<field>-` (a name or a list of names) removes those files.
 * Every upload is checked against `maxSize` (`validation_max`) and `mimeTypes` on its sniffed
 * content type (`validation_value`); the count is checked by the field codec (`validation_max`).
 *
 * New files are written before the write job (under a sweep hold); after the commit the files
 * the record no longer references are deleted, and after a failed job the new ones are.
 */
import type { FieldError } from '../errors/api-error.js';
import type { Collection, Field } from '../model/schema.js';
import type { WriteStep } from '../store/write-job.js';
import type { SqlValue } from '../store/bind.js';
import type { FileStore, RowGet } from '../store/file-store.js';
import { type FileStorage, detectMime, mimeAllowed, storedFileName } from './files.js';
import { fileNames } from '../collections/fields/index.js';
import type { CollectionRegistry } from '../collections/collection-registry.js';

/** One uploaded file: the client's file name and the bytes. */
export interface Upload {
  filename: string;
  data: Buffer;
}

/** Uploads of a multipart body keyed by form name (`<field>` or `<field>+`). */
export type Uploads = Map<string, Upload[]>;

/** The file changes of one record write. */
export interface FilePlan {
  /** final stored names per touched file field */
  values: Map<string, string[]>;
  /** new files to write (stored name → bytes) */
  writes: Map<string, Buffer>;
  /** stored names the record held before (per touched field; for the guard and the cleanup) */
  before: Map<string, string[]>;
  /** raw stored values before, for the concurrency guard (update only) */
  raw: Map<string, SqlValue>;
}

const asList = (v: unknown): string[] | null => {
  if (v === undefined || v === null || v === '') return [];
  if (typeof v === 'string') return [v];
  if (Array.isArray(v) && v.every((x) => typeof x === 'string')) return (v as string[]).filter((x) => x !== '');
  return null;
};

const fileFields = (c: Collection): Field[] => c.fields.filter((f) => f.type === 'file');

/**
 * What RecordFiles needs of storage: the statements over stored file names
 * (src/store/file-store.ts) and the collection registry's list, to find the collections a delete
 * cascades to. Built over the Store by the composition root (src/boot/repositories.ts); a test
 * may give a small fake.
 */
export interface FileRepository {
  /** the file-name statements of the open database's backend */
  rows: FileStore;
  /** the collection registry (every collection, read at each sweep) */
  registry: Pick<CollectionRegistry, 'all'>;
}

/** The file side of record writes (this module's header), files in `storage`, names through `repo`. */
export class RecordFiles {
  constructor(readonly storage: FileStorage, private repo: FileRepository) {}

  /** Whether a body or upload set touches any file field of `c`. */
  touches(c: Collection, body: Record<string, unknown>, uploads: Uploads | null): boolean {
    return fileFields(c).some((f) => f.name in body || `${f.name}-` in body || !!uploads?.has(f.name) || !!uploads?.has(`${f.name}+`));
  }

  /**
   * Computes the final names of every touched file field. `current` holds the record's stored
   * values by field name (empty on create). Problems go into `errors` by field name.
   */
  async plan(c: Collection, body: Record<string, unknown>, uploads: Uploads | null, current: Map<string, SqlValue>, errors: Record<string, FieldError>): Promise<FilePlan> {
    const plan: FilePlan = { values: new Map(), writes: new Map(), before: new Map(), raw: new Map() };
    for (const f of fileFields(c)) {
      const set = uploads?.get(f.name) ?? [];
      const append = uploads?.get(`${f.name}+`) ?? [];
      const removeRaw = body[`${f.name}-`];
      if (!(f.name in body) && !set.length && !append.length && removeRaw === undefined) continue;
      const have = fileNames(current.get(f.name) ?? null);
      plan.before.set(f.name, have);
      plan.raw.set(f.name, current.get(f.name) ?? null);
      const keep = f.name in body ? asList(body[f.name]) : set.length ? [] : have;
      const remove = asList(removeRaw);
      if (keep === null || remove === null) {
        errors[f.name] = { code: 'validation_type', message: 'Must be a file name or a list of file names.' };
        continue;
      }
      const unknown = keep.find((n) => !have.includes(n));
      if (unknown !== undefined) {
        errors[f.name] = { code: 'validation_value', message: `"${unknown}" is not a file of this record.` };
        continue;
      }
      const uploaded = [...set, ...append];
      let names = keep.filter((n) => !remove.includes(n));
      if ((f.options.maxSelect ?? 1) <= 1 && uploaded.length) names = [];
      const problem = await this.checkUploads(f, uploaded);
      if (problem) {
        errors[f.name] = problem;
        continue;
      }
      for (const u of uploaded) {
        const name = storedFileName(u.filename);
        plan.writes.set(name, u.data);
        names.push(name);
      }
      plan.values.set(f.name, names);
    }
    return plan;
  }

  private async checkUploads(f: Field, uploads: Upload[]): Promise<FieldError | null> {
    const maxSize = Number(f.options.maxSize ?? 0);
    for (const u of uploads) {
      if (maxSize > 0 && u.data.length > maxSize) return { code: 'validation_max', message: `"${u.filename}" is larger than ${maxSize} bytes.` };
      const mime = await detectMime(u.data, u.filename);
      if (!mimeAllowed(mime, f.options.mimeTypes as string[] | undefined)) {
        return { code: 'validation_value', message: `"${u.filename}" has the type ${mime}, which is not allowed (allowed: ${(f.options.mimeTypes as string[]).join(', ')}).` };
      }
    }
    return null;
  }

  /** Stored values of the file fields of a record by field name (a point read with `read`, the caller's reader); empty when absent. */
  async currentValues(read: RowGet, c: Collection, id: string): Promise<Map<string, SqlValue>> {
    const fields = fileFields(c);
    const out = new Map<string, SqlValue>();
    if (!fields.length) return out;
    const row = await this.repo.rows.values(read, c, fields.map((f) => f.name), id);
    if (row) fields.forEach((f, i) => out.set(f.name, row[i] as SqlValue));
    return out;
  }

  /**
   * A guard step for an update: fails with 409 when the record exists and any touched file field
   * changed since `plan` read it (a concurrent update), so no file is orphaned or lost.
   */
  guard(c: Collection, id: string, plan: FilePlan): WriteStep | null {
    if (!plan.raw.size) return null;
    return this.repo.rows.unchangedGuardStep(c, id, plan.raw, { status: 409, code: 'conflict', message: 'The files of this record changed during the update; retry.' });
  }

  /** Writes the plan's new files; returns the release function of the sweep hold. */
  async writeNew(c: Collection, id: string, plan: FilePlan): Promise<() => void> {
    const release = this.storage.hold(c.id, id);
    try {
      for (const [name, data] of plan.writes) await this.storage.write(c.id, id, name, data);
    } catch (err) {
      await this.storage.remove(c.id, id, [...plan.writes.keys()]);
      release();
      throw err;
    }
    return release;
  }

  /** After the commit: deletes the files the record no longer references. */
  async committed(c: Collection, id: string, plan: FilePlan): Promise<void> {
    const gone: string[] = [];
    for (const [field, before] of plan.before) {
      const now = plan.values.get(field) ?? before;
      for (const n of before) if (!now.includes(n)) gone.push(n);
    }
    await this.storage.remove(c.id, id, gone);
  }

  /**
   * After a record delete: deletes its files, then sweeps the collections whose records the delete
   * may have cascaded to (cascadeDelete relations into `c`, transitively) if they have file fields.
   */
  async deleted(c: Collection, id: string): Promise<void> {
    await this.storage.removeRecord(c.id, id);
    await this.sweepCascades(c);
  }

  /**
   * After rows of `c` were deleted in bulk (expiry collection): sweeps `c` and the collections a
   * delete in `c` may have cascaded to.
   */
  async bulkDeleted(c: Collection): Promise<void> {
    if (fileFields(c).length) await this.sweep(c);
    await this.sweepCascades(c);
  }

  private async sweepCascades(c: Collection): Promise<void> {
    const seen = new Set([c.id]);
    const queue = [c.id];
    while (queue.length) {
      const target = queue.shift()!;
      for (const other of this.repo.registry.all()) {
        if (seen.has(other.id)) continue;
        if (!other.fields.some((f) => f.type === 'relation' && f.options.cascadeDelete && f.options.collectionId === target)) continue;
        seen.add(other.id);
        queue.push(other.id);
        if (fileFields(other).length) await this.sweep(other);
      }
    }
  }

  /** Deletes the files of `c` no committed record references (see FileStorage.sweep). */
  sweep(c: Collection): Promise<number> {
    const fields = fileFields(c);
    const names = fields.map((f) => f.name);
    return this.storage.sweep(c.id, async (ids) => {
      const rows = await this.repo.rows.referenced(c, names, ids);
      const out = new Map<string, Set<string>>();
      for (const row of rows) out.set(String(row[0]), new Set(fields.flatMap((_f, i) => fileNames(row[i + 1]))));
      return out;
    });
  }

  /** After a failed job: deletes the files written for it. */
  async failed(c: Collection, id: string, plan: FilePlan): Promise<void> {
    await this.storage.remove(c.id, id, [...plan.writes.keys()]);
    await this.storage.pruneRecord(c.id, id);
  }
}
