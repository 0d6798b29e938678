/**
 * The in-memory schema registry: every collection by id and by name (case-insensitive), loaded
 * from the schema store (SchemaStore.loadAll) at startup and replaced after each committed schema change. Each entry
 * carries a version number so per-collection caches (serializers, compiled rules, statements)
 * know when to rebuild.
 */
import type { Collection } from '../model/schema.js';

export class CollectionRegistry {
  private byIdMap = new Map<string, Collection>();
  private byNameMap = new Map<string, Collection>();
  private versions = new Map<string, number>();
  private generation = 0;

  byId(id: string): Collection | undefined {
    return this.byIdMap.get(id);
  }
  byName(name: string): Collection | undefined {
    return this.byNameMap.get(name.toLowerCase());
  }
  /** Looks a collection up by id first, then by name. */
  find(idOrName: string): Collection | undefined {
    return this.byIdMap.get(idOrName) ?? this.byNameMap.get(idOrName.toLowerCase());
  }
  all(): Collection[] {
    return [...this.byIdMap.values()];
  }
  /**
   * Bumped on every schema change of any collection: caches of what depends on more than one
   * collection (filters and rules crossing relations, whose hops read the targets' rules and
   * expiry fields) key on it.
   */
  schemaGeneration(): number {
    return this.generation;
  }
  /** Bumped on every change; per-collection caches key on `${id}:${version(id)}`. */
  version(id: string): number {
    return this.versions.get(id) ?? 0;
  }

  /** Replaces the whole registry with `collections` (every stored definition, SchemaStore.loadAll). */
  load(collections: Collection[]): void {
    this.byIdMap.clear();
    this.byNameMap.clear();
    for (const c of collections) this.put(c);
  }

  /** Inserts or replaces one collection (after its change committed). */
  put(c: Collection): void {
    const old = this.byIdMap.get(c.id);
    if (old) this.byNameMap.delete(old.name.toLowerCase());
    this.byIdMap.set(c.id, c);
    this.byNameMap.set(c.name.toLowerCase(), c);
    this.versions.set(c.id, ++this.generation);
  }

  remove(id: string): void {
    const old = this.byIdMap.get(id);
    if (!old) return;
    this.byIdMap.delete(id);
    this.byNameMap.delete(old.name.toLowerCase());
    this.versions.set(id, ++this.generation);
  }
}

/** The API shape of a collection: `fields` goes out as `schema`. */
export function collectionToJson(c: Collection): Record<string, unknown> {
  return {
    id: c.id,
    name: c.name,
    type: c.type,
    system: c.system,
    schema: c.fields,
    indexes: c.indexes,
    options: c.options,
    listRule: c.listRule,
    viewRule: c.viewRule,
    createRule: c.createRule,
    updateRule: c.updateRule,
    deleteRule: c.deleteRule,
    created: c.created,
    updated: c.updated,
  };
}
