/**
 * Settings, the declared registry of flags and experiments, and their resolution
 * (docs/api.md, "Settings, flags and experiments", `/api/settings`, `/api/features`,
 * `/api/state`; docs/framework.md: `flags`, `experiments`, `stateRoute`).
 *
 * Settings are opaque strings under keys, kept in `_settings` and mirrored in memory, so
 * `/api/state` reads no table for flags. The mirror, the per-subject state cache and the sticky
 * assignments cached change only from the change feed (src/store/change-feed.ts): every write of
 * `_settings` or `_assignments` names its row there (SETTINGS_FEED_ID, ASSIGNMENTS_FEED_ID), and
 * the feed delivers it on the writing process before the write is answered and, on PostgreSQL,
 * on every other instance (the cluster feed); each then reads the row again, with a promise read
 * the feed waits for (src/store/change-feed.ts: the batch reaches the later listeners, and the
 * write is answered, once the mirror has it; reloads run one at a time, in commit order). One
 * invalidation path, whoever wrote (docs/framework.md, "Flags and experiments"). A flag's
 * value is its override (`flag:<name>` = `true`/`false`) or its default. An experiment assigns a
 * subject by xxhash32 of `<experiment>:<subject>` over the weights (the override in
 * `exp:<name>:weights`, a JSON array of integers, or the declared ones); a sticky experiment keeps
 * the first variant a (non-empty) subject got in `_assignments`: resolving reads it (cached), and
 * only a subject's first-ever resolve takes the writer.
 */
import { xxh32 } from '@node-rs/xxhash';
import { ApiError } from '../errors/api-error.js';
import { ASSIGNMENTS_FEED_ID, EVERY_ROW, SETTINGS_FEED_ID, type ChangeBatch, type ChangeFeed } from '../store/change-feed.js';
import type { SettingsRowStore } from '../store/settings-store.js';
import type { StepResult, WriteStep } from '../store/write-job.js';
import { bindValue } from '../store/bind.js';
import { nowDate } from '../collections/fields/index.js';
import { experimentWeightsKey, flagKey } from './setting.js';
import type { Setting } from '../model/setting.js';
import { boundedCache } from '../cache/bounded.js';

/** A declared flag (app definition `flags`). */
export interface FlagDefinition {
  name: string;
  default: boolean;
  description?: string;
}

/** A declared experiment (app definition `experiments`). */
export interface ExperimentDefinition {
  name: string;
  variants: { name: string; weight: number }[];
  sticky?: boolean;
  description?: string;
}

/** `/api/features` entries (docs/api.md, "Settings, flags and experiments"). */
export interface FlagView { name: string; default: boolean; description: string; override: string | null }
export interface ExperimentView { name: string; variants: string[]; weights: number[]; sticky: boolean; description: string; weight_override: string | null }

/** Longest setting key and value accepted (characters). */
export const MAX_SETTING_KEY = 200;
export const MAX_SETTING_VALUE = 64 * 1024;
/** Sticky assignments kept in memory. */
const ASSIGNMENT_CACHE = 100_000;

/**
 * What FeatureService needs of storage: the settings and assignment statements
 * (src/store/settings-store.ts), the writer that commits their steps, the change feed it follows
 * (this module's header) and the end of the reader's snapshot before a reload. Built over the
 * Store by the composition root (src/boot/repositories.ts); a test may give a small fake.
 */
export interface SettingsRepository {
  /** the settings statements of the open database's backend */
  rows: SettingsRowStore;
  /** Commits `steps` as one write job (SqlWriter.write). @throws the writer's error when the job fails */
  write(steps: WriteStep[]): Promise<StepResult[]>;
  /** the writer's change feed (SqlWriter.changes), followed until `close()` */
  changes: Pick<ChangeFeed, 'subscribe'>;
  /** Ends the reader's current read snapshot (SqlReader.endSnapshot): the next read sees the latest commit. */
  endSnapshot(): void;
}

/** Settings, flags and experiments (this module's header), over a SettingsRepository. */
export class FeatureService {
  private settings = new Map<string, Setting>();
  private assigned = boundedCache<string, string>(ASSIGNMENT_CACHE);
  /** `/api/state` bodies by subject, valid until an override changes */
  private stateCache = boundedCache<string, string>(ASSIGNMENT_CACHE);
  private flagsByName: Map<string, FlagDefinition>;
  private experimentsByName: Map<string, ExperimentDefinition>;
  /** told after a flag or experiment override changes (subscribeOverrideChanges) */
  private readonly overrideListeners = new Set<() => void>();
  /** override changes so far (a state computed across one is not cached) */
  private overridesGen = 0;
  /** a refresh from the feed failed to read: the mirror is read whole again from its next use on */
  private stale = false;
  /** the reloads of the mirror, one after another (each settles, never rejects) */
  private reloads: Promise<void> = Promise.resolve();
  /** a whole reload started by mirror() after a failed one, until it ends */
  private retrying = false;
  private readonly unsubscribe: () => void;

  /**
   * The service over `repo` with every setting read into the mirror (`_settings`), following the
   * change feed from then on.
   * @throws the reader's error when the settings cannot be read
   */
  static async open(repo: SettingsRepository, flags: readonly FlagDefinition[] = [], experiments: readonly ExperimentDefinition[] = []): Promise<FeatureService> {
    return new FeatureService(repo, flags, experiments, await repo.rows.all());
  }

  private constructor(private repo: SettingsRepository, readonly flags: readonly FlagDefinition[], readonly experiments: readonly ExperimentDefinition[], settings: readonly Setting[]) {
    for (const s of settings) this.settings.set(s.key, s);
    this.flagsByName = new Map(flags.map((f) => [f.name, f]));
    this.experimentsByName = new Map(experiments.map((e) => [e.name, e]));
    this.unsubscribe = repo.changes.subscribe((batch) => this.onBatch(batch));
  }

  /** Stops following the change feed (the store's writer outlives this service). */
  close(): void {
    this.unsubscribe();
  }

  /**
   * Calls `listener` after a flag or experiment override changes, on every instance (the
   * realtime `__features` signal); answers the function that stops it.
   */
  subscribeOverrideChanges(listener: () => void): () => void {
    this.overrideListeners.add(listener);
    return () => void this.overrideListeners.delete(listener);
  }

  /**
   * The one invalidation path: a committed batch naming settings or assignments (this process's
   * writes and, on PostgreSQL, every other instance's). A setting named is read again (absent:
   * deleted); a truncated `_settings`, or the id `/` (SettingsRowStore.changedAllSteps: after app
   * migrations), reloads them all. States cached go when an override may have
   * moved; a subject's cached state and sticky variant go when its assignment was written.
   * Answers the reload's promise when settings are read again (the feed waits for it), else
   * nothing.
   */
  private onBatch(batch: ChangeBatch): Promise<void> | undefined {
    let keys: string[] | null = null;
    let allSettings = batch.truncated.includes(SETTINGS_FEED_ID);
    let allAssignments = batch.truncated.includes(ASSIGNMENTS_FEED_ID);
    for (const ch of batch.changes) {
      if (ch.collection === SETTINGS_FEED_ID) {
        if (ch.id === EVERY_ROW) allSettings = true;
        else (keys ??= []).push(ch.id);
      } else if (ch.collection === ASSIGNMENTS_FEED_ID) {
        const at = ch.id === EVERY_ROW ? null : parseAssignmentId(ch.id);
        if (at) {
          this.assigned.delete(`${at[0]}\u0000${at[1]}`);
          this.stateCache.delete(at[1]);
        } else allAssignments = true;
      }
    }
    if (allAssignments) {
      this.assigned.clear();
      this.stateCache.clear();
    }
    if (!allSettings && !keys) return undefined;
    const named = keys;
    return this.serially(async () => {
      let overrides = false;
      if (allSettings) overrides = await this.reloadAll();
      else if (named) {
        // a remote commit: the reader may hold a snapshot taken before it
        this.repo.endSnapshot();
        await Promise.all(named.map((key) => this.reload(key)));
        overrides = named.some((key) => this.isOverrideKey(key));
      }
      if (overrides) this.changed();
    });
  }

  /** Runs `fn` after every reload queued before it (each reload settles: `fn` never rejects). */
  private serially(fn: () => Promise<void>): Promise<void> {
    const run = this.reloads.then(fn);
    this.reloads = run;
    return run;
  }

  /** Reads one setting into the mirror (or out of it when gone); on a failed read the mirror turns stale. */
  private async reload(key: string): Promise<void> {
    try {
      const s = await this.repo.rows.get(key);
      if (s) this.settings.set(key, s);
      else this.settings.delete(key);
    } catch {
      this.stale = true;
    }
  }

  /** Reads every setting; true when an override's value may have moved (or the read failed). */
  private async reloadAll(): Promise<boolean> {
    this.repo.endSnapshot();
    let rows: Setting[];
    try {
      rows = await this.repo.rows.all();
    } catch {
      this.stale = true;
      return true;
    }
    const before = this.settings;
    this.settings = new Map(rows.map((s) => [s.key, s]));
    this.stale = false;
    for (const k of new Set([...before.keys(), ...this.settings.keys()])) {
      if (this.isOverrideKey(k) && before.get(k)?.value !== this.settings.get(k)?.value) return true;
    }
    return false;
  }

  /**
   * The mirror. When a refresh from the feed could not read, it is read whole again, in the
   * background (a read never blocks here): this answer is the mirror as it is, the next ones have
   * the reload once it ended.
   */
  private mirror(): Map<string, Setting> {
    if (this.stale && !this.retrying) {
      this.retrying = true;
      void this.serially(async () => {
        if (this.stale && (await this.reloadAll()) && !this.stale) this.changed();
        this.retrying = false;
      });
    }
    return this.settings;
  }

  // ----- settings -----

  list(): Setting[] {
    return [...this.mirror().values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  get(key: string): Setting | undefined {
    return this.mirror().get(key);
  }

  /**
   * Creates or replaces a setting. A declared flag's override must be `true` or `false`; a
   * declared experiment's weights a JSON array of non-negative integers, one per variant, with a
   * positive sum.
   * @throws ApiError 400 for a bad key or value
   */
  async put(key: string, value: unknown): Promise<Setting> {
    checkKey(key);
    if (typeof value !== 'string') throw ApiError.validation({ value: { code: 'validation_type', message: 'Must be a string.' } });
    if (value.length > MAX_SETTING_VALUE) throw ApiError.validation({ value: { code: 'validation_max', message: `Must be at most ${MAX_SETTING_VALUE} characters.` } });
    const override = this.overrideProblem(key, value);
    if (override) throw ApiError.validation({ value: { code: 'validation_value', message: override } });
    const now = nowDate();
    // the change feed delivers the write (onBatch) before it is answered: the mirror has it then
    await this.write([this.repo.rows.putStep(key, value, now)]);
    return { key, value, created: this.settings.get(key)?.created ?? now, updated: now };
  }

  /** Deletes a setting (the mirror drops it from the change feed, as on every instance). @throws ApiError 404 when absent */
  async delete(key: string): Promise<void> {
    checkKey(key);
    await this.write([this.repo.rows.deleteStep(key, { status: 404, code: 'not_found', message: 'The requested resource was not found.' })]);
  }

  private isOverrideKey(key: string): boolean {
    return key.startsWith('flag:') || (key.startsWith('exp:') && key.endsWith(':weights'));
  }

  private changed(): void {
    // values and weights may have moved: cached states go; sticky variants stay (they are persisted)
    this.overridesGen++;
    this.stateCache.clear();
    for (const listener of this.overrideListeners) listener();
  }

  private overrideProblem(key: string, value: string): string | null {
    if (key.startsWith('flag:') && this.flagsByName.has(key.slice(5)) && value !== 'true' && value !== 'false') return 'A flag override is "true" or "false".';
    const m = /^exp:(.+):weights$/.exec(key);
    const e = m ? this.experimentsByName.get(m[1]) : undefined;
    if (e && !parseWeights(value, e.variants.length)) return `Experiment weights are a JSON array of ${e.variants.length} non-negative integers with a positive sum.`;
    return null;
  }

  // ----- the registry -----

  /** `/api/features`: the declared flags and experiments with their overrides. */
  features(): { flags: FlagView[]; experiments: ExperimentView[] } {
    return {
      flags: this.flags.map((f) => ({ name: f.name, default: f.default, description: f.description ?? '', override: this.mirror().get(flagKey(f.name))?.value ?? null })),
      experiments: this.experiments.map((e) => ({
        name: e.name, variants: e.variants.map((v) => v.name), weights: e.variants.map((v) => v.weight), sticky: !!e.sticky,
        description: e.description ?? '', weight_override: this.mirror().get(experimentWeightsKey(e.name))?.value ?? null,
      })),
    };
  }

  /** A flag's value: its override, else its default; false for an undeclared flag. */
  flag(name: string): boolean {
    const f = this.flagsByName.get(name);
    if (!f) return false;
    const o = this.mirror().get(flagKey(name))?.value;
    return o === 'true' ? true : o === 'false' ? false : f.default;
  }

  /** The variant `subject` gets in an experiment ('' subject: the anonymous assignment); undefined for an undeclared one. */
  async variant(name: string, subject: string): Promise<string | undefined> {
    const e = this.experimentsByName.get(name);
    if (!e) return undefined;
    if (!e.sticky || subject === '') return this.bucket(e, subject);
    const key = `${name}\u0000${subject}`;
    const hit = this.assigned.get(key);
    if (hit !== undefined) return hit;
    let v = await this.repo.rows.assignment(name, subject);
    if (v === undefined) {
      v = this.bucket(e, subject);
      await this.write([this.repo.rows.assignStep(name, subject, v, nowDate())]);
      // a concurrent first resolve (another process) may have won: the stored one counts
      v = (await this.repo.rows.assignment(name, subject)) ?? v;
    }
    this.assigned.set(key, v);
    return v;
  }

  /**
   * The `/api/state` body for a subject, as JSON: answered from a per-subject cache (bounded,
   * cleared when an override changes), else at once when no sticky experiment needs a first
   * assignment written, else after that write.
   */
  stateJson(subject: string): string | Promise<string> {
    const hit = this.stateCache.get(subject);
    if (hit !== undefined) return hit;
    const now = this.stateSync(subject);
    if (now) return this.remember(subject, now);
    // an override that changes while the first assignment is written leaves this state stale: not kept
    const gen = this.overridesGen;
    return this.state(subject).then((st) => (gen === this.overridesGen ? this.remember(subject, st) : JSON.stringify(st)));
  }

  private remember(subject: string, st: { flags: Record<string, boolean>; experiments: Record<string, string> }): string {
    const text = JSON.stringify(st);
    this.stateCache.set(subject, text);
    return text;
  }

  /** The state without a read or a write: null when a sticky experiment has no variant known here for the subject yet. */
  private stateSync(subject: string): { flags: Record<string, boolean>; experiments: Record<string, string> } | null {
    const flags: Record<string, boolean> = {};
    for (const f of this.flags) flags[f.name] = this.flag(f.name);
    const experiments: Record<string, string> = {};
    for (const e of this.experiments) {
      if (!e.sticky || subject === '') {
        experiments[e.name] = this.bucket(e, subject);
        continue;
      }
      const key = `${e.name}\u0000${subject}`;
      // a variant not known here yet is read (or first written) on the asynchronous path, state
      const v = this.assigned.get(key);
      if (v === undefined) return null;
      experiments[e.name] = v;
    }
    return { flags, experiments };
  }

  /** `/api/state?subject=`: every flag's value and every experiment's variant for the subject. */
  async state(subject: string): Promise<{ flags: Record<string, boolean>; experiments: Record<string, string> }> {
    const flags: Record<string, boolean> = {};
    for (const f of this.flags) flags[f.name] = this.flag(f.name);
    const experiments: Record<string, string> = {};
    for (const e of this.experiments) experiments[e.name] = (await this.variant(e.name, subject))!;
    return { flags, experiments };
  }

  private bucket(e: ExperimentDefinition, subject: string): string {
    const override = this.mirror().get(experimentWeightsKey(e.name))?.value;
    const weights = (override !== undefined ? parseWeights(override, e.variants.length) : null) ?? e.variants.map((v) => v.weight);
    const total = weights.reduce((a, b) => a + b, 0);
    let point = xxh32(`${e.name}:${subject}`, 0) % total;
    for (let i = 0; i < weights.length; i++) {
      if (point < weights[i]) return e.variants[i].name;
      point -= weights[i];
    }
    return e.variants[e.variants.length - 1].name;
  }

  private write(steps: WriteStep[]): Promise<unknown> {
    for (const s of steps) s.params = s.params.map(bindValue);
    return this.repo.write(steps);
  }
}

/** 400 unless `key` is 1 to 200 characters without control characters or `/`. */
function checkKey(key: string): void {
  if (typeof key !== 'string' || key === '' || key.length > MAX_SETTING_KEY || /[\u0000-\u001f\u007f/]/.test(key)) {
    throw ApiError.validation({ key: { code: 'validation_value', message: `A setting key is 1 to ${MAX_SETTING_KEY} characters, without "/" or control characters.` } });
  }
}

/** `[experiment, subject]` of an assignment's feed id (settings-sql.ts), or null. */
function parseAssignmentId(id: string): [string, string] | null {
  try {
    const v = JSON.parse(id) as unknown;
    return Array.isArray(v) && v.length === 2 && typeof v[0] === 'string' && typeof v[1] === 'string' ? [v[0], v[1]] : null;
  } catch {
    return null;
  }
}

/** A weights override: a JSON array of `n` non-negative integers with a positive sum, or null. */
export function parseWeights(value: string, n: number): number[] | null {
  try {
    const w = JSON.parse(value);
    if (!Array.isArray(w) || w.length !== n || !w.every((x) => Number.isInteger(x) && x >= 0 && x <= 1_000_000)) return null;
    return w.reduce((a: number, b: number) => a + b, 0) > 0 ? w : null;
  } catch {
    return null;
  }
}
