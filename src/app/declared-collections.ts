/**
 * An app's declared collections (docs/framework.md: `collections`, the same JSON as
 * the REST API), brought into the database when the server starts, before it listens:
 *
 * - a declared collection that does not exist is created;
 * - one that exists is updated to the declaration when they differ, fields matched by name (so
 *   their ids and data are kept), as long as the change keeps data: a field in the database that
 *   the declaration leaves out, or one whose type the declaration changes, stops the start with a
 *   message (the REST API or `svc schema apply --allow-drop` makes such changes deliberately);
 * - collections the app does not declare are left alone.
 *
 * A relation field may name its target collection by name in `options.collection` (declared
 * collections have no ids before they exist); it is resolved to the id as collections are made.
 */
import type { Collection } from '../model/schema.js';
import type { CollectionsService } from '../collections/collections-service.js';
import type { CollectionRegistry } from '../collections/collection-registry.js';
import type { Logger } from '../log/logger.js';
import { buildCollection } from '../collections/collection-input.js';
import { knownApiError } from '../errors/api-error.js';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const AUTH_FIELDS = new Set(['email', 'emailVisibility', 'verified']);

/**
 * Creates or updates the declared collections, in order. `registry`: the collections as they are
 * (the registry `collections` updates; only looked up here, instead of the whole Store).
 * @throws Error naming the collection and the problem (an invalid declaration, or a change that would lose data)
 */
export async function applyDeclaredCollections(declared: readonly Record<string, unknown>[], collections: CollectionsService, registry: Pick<CollectionRegistry, 'find' | 'all'>, logger: Logger): Promise<void> {
  for (const raw of declared) {
    const name = String(raw.name);
    const body = resolveRelations(raw, registry);
    const prev = registry.find(name);
    try {
      if (!prev) {
        await collections.create(body);
        logger.info(`created the declared collection "${name}"`, 'app');
        continue;
      }
      const merged = keepFieldIds(body, prev);
      const next = buildCollection(merged, prev, registry.all().filter((c) => c.id !== prev.id));
      if (same(prev, next)) continue;
      await collections.update(prev.id, merged);
      logger.info(`updated the declared collection "${name}" to match the app`, 'app');
    } catch (err) {
      const api = knownApiError(err);
      const detail = api ? `${api.message}${Object.keys(api.data).length ? ` ${JSON.stringify(api.data)}` : ''}` : (err as Error).message;
      throw new Error(`the app's declared collection "${name}": ${detail}`);
    }
  }
}

/** `options.collection: <name>` of relation fields → `options.collectionId`. */
function resolveRelations(raw: Record<string, unknown>, registry: Pick<CollectionRegistry, 'find'>): Record<string, unknown> {
  const fields = Array.isArray(raw.fields) ? raw.fields : undefined;
  if (!fields) return raw;
  return {
    ...raw,
    fields: fields.map((f) => {
      if (!isObject(f) || f.type !== 'relation' || !isObject(f.options) || typeof f.options.collection !== 'string') return f;
      const { collection, ...rest } = f.options;
      const target = registry.find(collection as string);
      // a self-relation of a collection being created resolves once it exists: leave it to the API's check
      return { ...f, options: { ...rest, collectionId: target?.id ?? collection } };
    }),
  };
}

/**
 * The declaration with each field given the id of the existing field of the same name; refuses a
 * declaration that leaves out an existing field or changes a field's type.
 */
function keepFieldIds(body: Record<string, unknown>, prev: Collection): Record<string, unknown> {
  if (!Array.isArray(body.fields)) return body; // fields left out: the stored ones stay
  const fields = Array.isArray(body.fields) ? body.fields.filter(isObject) : [];
  const byName = new Map(prev.fields.map((f) => [f.name, f]));
  const declaredNames = new Set(fields.map((f) => String(f.name)));
  const dropped = prev.fields.filter((f) => !f.system && !(prev.type === 'auth' && AUTH_FIELDS.has(f.name)) && !declaredNames.has(f.name));
  if (dropped.length) {
    throw new Error(`the database has field(s) ${dropped.map((f) => `"${f.name}"`).join(', ')} that the app does not declare; removing a field deletes its data, so it is not done at start (remove it through the API, or declare it)`);
  }
  return {
    ...body,
    fields: fields.map((f) => {
      const old = byName.get(String(f.name));
      if (!old) return f;
      if (typeof f.type === 'string' && f.type !== old.type) throw new Error(`field "${old.name}" is ${old.type} in the database and ${f.type} in the app; a type change is not done at start`);
      return { ...f, id: old.id };
    }),
  };
}

/** True when a rebuilt collection equals the stored one (timestamps aside). */
function same(a: Collection, b: Collection): boolean {
  const strip = (c: Collection) => JSON.stringify({ ...c, created: '', updated: '' });
  return strip(a) === strip(b);
}
