/**
 * Schema as code (docs/operations.md, "Command line" and "Schema as code": `svc schema
 * dump [--out=FILE]`, `svc schema apply FILE [--dry-run] [--allow-drop]`).
 *
 * A dump is `{collections: [...]}`: every non-system collection as the REST API writes it (ids
 * included, timestamps left out), sorted by name, fields in their order, so two dumps of the same
 * schema are byte-identical and a change reads as a small diff.
 *
 * Applying a file makes the database match it. Collections are matched by id, then by name;
 * fields by id, then by name. So a rename in the file (same id, new name) renames the table or
 * column and keeps the data. The plan lists every create, update and delete; a change that loses
 * data (a collection or field the file leaves out) is destructive and is applied only when
 * allowed. Every change goes through the same validation and the same write path as the REST
 * API (CollectionsService), creates first (relation targets before the collections pointing at
 * them), then updates, then deletes.
 */
import type { Collection } from '../model/schema.js';
import type { CollectionsService } from '../collections/collections-service.js';
import { collectionToJson, type CollectionRegistry } from '../collections/collection-registry.js';
import { buildCollection } from '../collections/collection-input.js';
import { ApiError, knownApiError } from '../errors/api-error.js';

/** A schema file. */
export interface SchemaDocument {
  collections: Record<string, unknown>[];
}

/** One step of a plan. */
export interface PlanItem {
  action: 'create' | 'update' | 'delete';
  /** the collection's name after the change (before it, for a delete) */
  collection: string;
  /** loses data: a dropped collection or field */
  destructive: boolean;
  /** what changes, one phrase each */
  changes: string[];
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A collection as a dump writes it: the REST JSON without timestamps. */
function dumped(c: Collection): Record<string, unknown> {
  const { created: _c, updated: _u, ...rest } = collectionToJson(c);
  return rest;
}

/**
 * What the schema commands read of a database: its collection registry (the live collections).
 * The Store of an open database satisfies it, as does `{ registry }` over a registry read on its
 * own (cli/commands/schema.ts).
 */
export interface SchemaSource {
  registry: Pick<CollectionRegistry, 'all' | 'byId' | 'find'>;
}

/** The schema of `store` as a document (see the module comment). */
export function dumpSchema(store: SchemaSource): SchemaDocument {
  const list = store.registry.all().filter((c) => !c.system).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { collections: list.map(dumped) };
}

/**
 * Checks a parsed schema file's shape.
 * @throws ApiError 400 naming the problem
 */
export function checkDocument(doc: unknown): SchemaDocument {
  if (!isObject(doc) || !Array.isArray(doc.collections)) throw ApiError.badRequest('A schema file is a JSON object {"collections": [...]} (what `svc schema dump` writes).');
  const names = new Set<string>();
  const ids = new Set<string>();
  doc.collections.forEach((c, i) => {
    if (!isObject(c) || typeof c.name !== 'string' || c.name === '') throw ApiError.badRequest(`collections[${i}]: each collection needs a name.`);
    if (c.system === true || c.name.startsWith('_')) throw ApiError.badRequest(`collections[${i}] (${c.name}): system collections are not part of a schema file.`);
    if (names.has(c.name.toLowerCase())) throw ApiError.badRequest(`collections[${i}]: "${c.name}" appears twice.`);
    names.add(c.name.toLowerCase());
    if (typeof c.id === 'string') {
      if (ids.has(c.id)) throw ApiError.badRequest(`collections[${i}]: the id "${c.id}" appears twice.`);
      ids.add(c.id);
    }
  });
  return doc as unknown as SchemaDocument;
}

interface Matched {
  body: Record<string, unknown>;
  prev: Collection | undefined;
}

function match(store: SchemaSource, doc: SchemaDocument): Matched[] {
  const live = store.registry.all().filter((c) => !c.system);
  return doc.collections.map((body) => {
    const prev = (typeof body.id === 'string' ? live.find((c) => c.id === body.id) : undefined) ?? live.find((c) => c.name.toLowerCase() === String(body.name).toLowerCase());
    return { body, prev };
  });
}

/** Field ids of the file matched to the stored ones (by id, else by name), so renames keep data. */
function withFieldIds(body: Record<string, unknown>, prev: Collection): Record<string, unknown> {
  const input = body.fields ?? body.schema;
  if (!Array.isArray(input)) return body;
  const ids = new Set(prev.fields.map((f) => f.id));
  const byName = new Map(prev.fields.map((f) => [f.name.toLowerCase(), f.id]));
  const fields = input.map((f) => {
    if (!isObject(f)) return f;
    if (typeof f.id === 'string' && ids.has(f.id)) return f;
    const id = typeof f.name === 'string' ? byName.get(f.name.toLowerCase()) : undefined;
    return id ? { ...f, id } : f;
  });
  // an index naming a renamed field by its old name follows the rename
  const newNames = new Set(fields.filter(isObject).map((f) => String(f.name)));
  const renamed = new Map<string, string>();
  for (const f of fields.filter(isObject)) {
    const old = prev.fields.find((p) => p.id === f.id);
    if (old && old.name !== f.name && !newNames.has(old.name)) renamed.set(old.name, String(f.name));
  }
  const indexes = Array.isArray(body.indexes) && renamed.size
    ? body.indexes.map((ix) => (isObject(ix) && Array.isArray(ix.fields) ? { ...ix, fields: ix.fields.map((n) => (typeof n === 'string' ? renamed.get(n) ?? n : n)) } : ix))
    : body.indexes;
  const { schema: _s, ...rest } = body;
  return indexes === undefined ? { ...rest, id: prev.id, fields } : { ...rest, id: prev.id, fields, indexes };
}

function describeUpdate(prev: Collection, next: Collection): { changes: string[]; destructive: boolean } {
  const changes: string[] = [];
  if (prev.name !== next.name) changes.push(`rename to "${next.name}"`);
  const nextById = new Map(next.fields.map((f) => [f.id, f]));
  const prevById = new Map(prev.fields.map((f) => [f.id, f]));
  let destructive = false;
  for (const f of prev.fields) {
    const n = nextById.get(f.id);
    if (!n) {
      changes.push(`drop field "${f.name}"`);
      destructive = true;
    } else {
      if (n.name !== f.name) changes.push(`rename field "${f.name}" to "${n.name}"`);
      if (JSON.stringify({ ...n, name: '' }) !== JSON.stringify({ ...f, name: '' })) changes.push(`change field "${n.name}"`);
    }
  }
  for (const f of next.fields) if (!prevById.has(f.id)) changes.push(`add field "${f.name}" (${f.type})`);
  for (const r of ['listRule', 'viewRule', 'createRule', 'updateRule', 'deleteRule'] as const) {
    if (prev[r] !== next[r]) changes.push(`${r}: ${JSON.stringify(prev[r])} → ${JSON.stringify(next[r])}`);
  }
  if (JSON.stringify(prev.indexes) !== JSON.stringify(next.indexes)) changes.push('indexes');
  if (JSON.stringify(prev.options) !== JSON.stringify(next.options)) changes.push('options');
  return { changes, destructive };
}

/** The file's new collections in an order where relation targets come first (cycles: file order). */
function createOrder(news: Matched[], existing: Set<string>): Matched[] {
  const out: Matched[] = [];
  let pending = news;
  while (pending.length) {
    const have = new Set([...existing, ...out.map((m) => String(m.body.id ?? ''))]);
    let ready = pending.filter((m) => targets(m.body).every((t) => have.has(t) || t === m.body.id));
    if (!ready.length) ready = [pending[0]];
    out.push(...ready);
    pending = pending.filter((m) => !ready.includes(m));
  }
  return out;
}

/**
 * The plan that makes `store`'s schema match `doc`, in the order it would run. Every collection of
 * the file is validated as the REST API would (against the schema as it will be).
 * @throws ApiError 400 (with the collection named) when a collection of the file is invalid
 */
export function planSchema(store: SchemaSource, doc: SchemaDocument): PlanItem[] {
  const matched = match(store, doc);
  const live = store.registry.all();
  const provisional: Collection[] = [];
  const plan: PlanItem[] = [];
  for (const m of createOrder(matched.filter((x) => !x.prev), new Set(live.map((c) => c.id)))) {
    try {
      provisional.push(buildCollection(m.body, undefined, [...live, ...provisional]));
    } catch (err) {
      throw inCollection(err, String(m.body.name));
    }
    plan.push({ action: 'create', collection: String(m.body.name), destructive: false, changes: [`create ${String(m.body.type ?? 'base')} collection`] });
  }
  for (const { body, prev } of matched) {
    if (!prev) continue;
    let next: Collection;
    try {
      next = buildCollection(withFieldIds(body, prev), prev, [...live.filter((c) => c.id !== prev.id), ...provisional]);
    } catch (err) {
      throw inCollection(err, String(body.name));
    }
    const { changes, destructive } = describeUpdate(prev, next);
    if (changes.length) plan.push({ action: 'update', collection: next.name, destructive, changes });
  }
  const kept = new Set(matched.map((m) => m.prev?.id));
  for (const c of live) if (!c.system && !kept.has(c.id)) plan.push({ action: 'delete', collection: c.name, destructive: true, changes: ['drop the collection and its records'] });
  return plan;
}

function inCollection(thrown: unknown, name: string): Error {
  const err = knownApiError(thrown);
  if (err) {
    const detail = Object.keys(err.data).length ? ` ${JSON.stringify(err.data)}` : '';
    return new ApiError(err.status, err.code, `collection "${name}": ${err.message}${detail}`, err.data);
  }
  return thrown as Error;
}

/** Relation targets named by a collection body's fields. */
function targets(body: Record<string, unknown>): string[] {
  const input = body.fields ?? body.schema;
  if (!Array.isArray(input)) return [];
  return input.filter((f) => isObject(f) && f.type === 'relation' && isObject(f.options)).map((f) => String(((f as Record<string, unknown>).options as Record<string, unknown>).collectionId ?? ''));
}

/**
 * Applies `doc` to the database: creates (relation targets first), updates, then deletes, each
 * through the REST API's validation and write path. Answers the plan it carried out.
 * @throws ApiError 409 `conflict` when the plan is destructive and `allowDrop` is false (nothing
 *   is applied); the first failing change's error otherwise (earlier changes stay applied)
 */
export async function applySchema(store: SchemaSource, collections: CollectionsService, doc: SchemaDocument, allowDrop: boolean): Promise<PlanItem[]> {
  const plan = planSchema(store, doc);
  if (!allowDrop && plan.some((p) => p.destructive)) {
    throw new ApiError(409, 'conflict', `the schema change drops data (${plan.filter((p) => p.destructive).map((p) => `${p.action} ${p.collection}: ${p.changes.join(', ')}`).join('; ')}); pass --allow-drop to apply it`);
  }
  const matched = match(store, doc);
  for (const m of createOrder(matched.filter((x) => !x.prev), new Set(store.registry.all().map((c) => c.id)))) {
    try {
      await collections.create(m.body);
    } catch (err) {
      throw inCollection(err, String(m.body.name));
    }
  }
  for (const m of matched) {
    if (!m.prev) continue;
    const prev = store.registry.byId(m.prev.id)!;
    const body = withFieldIds(m.body, prev);
    const next = buildCollection(body, prev, store.registry.all().filter((c) => c.id !== prev.id));
    if (!describeUpdate(prev, next).changes.length) continue;
    try {
      await collections.update(prev.id, body);
    } catch (err) {
      throw inCollection(err, String(m.body.name));
    }
  }
  const keep = new Set(matched.map((m) => m.prev?.id ?? store.registry.find(String(m.body.name))?.id));
  let drops = store.registry.all().filter((c) => !c.system && !keep.has(c.id));
  // referrers first: a collection that is a relation target cannot be deleted before them
  while (drops.length) {
    const targeted = new Set(drops.flatMap((c) => c.fields.filter((f) => f.type === 'relation').map((f) => String(f.options.collectionId))).filter((t) => t));
    const ready = drops.filter((c) => !targeted.has(c.id) || c.fields.some((f) => f.type === 'relation' && f.options.collectionId === c.id));
    for (const c of ready.length ? ready : [drops[0]]) await collections.delete(c.id);
    drops = drops.filter((c) => store.registry.byId(c.id));
  }
  return plan;
}
