/**
 * The storage boundary of settings and experiment assignments (docs/api.md, "Settings, flags and
 * experiments"; docs/framework.md, "Flags and experiments"); implemented for both backends by
 * src/store/shared/settings-sql.ts.
 */
import type { WriteStep } from './write-job.js';
import type { Setting } from '../model/setting.js';

export interface SettingsRowStore {
  /** Every setting, by key (a promise on both backends: FeatureService reads on the change feed, never blocking). */
  all(): Promise<Setting[]>;
  /** One setting, or undefined when there is none. */
  get(key: string): Promise<Setting | undefined>;
  /**
   * Step creating or replacing a setting (`created` kept on replace). Like every step that writes
   * `_settings` or `_assignments`, it names its row on the change feed (`creates` under
   * SETTINGS_FEED_ID / ASSIGNMENTS_FEED_ID, src/store/change-feed.ts), which is how every
   * instance's FeatureService hears of it.
   */
  putStep(key: string, value: string, now: string): WriteStep;
  /** Step deleting a setting; fails the job with `fail` when there is none. */
  deleteStep(key: string, fail: NonNullable<WriteStep['fail']>): WriteStep;
  /**
   * Steps that write nothing and announce on the change feed that every setting and assignment may
   * have changed (their reserved ids with the id `/`, which no key has): for writes made outside
   * the writer, the app's migrations.
   */
  changedAllSteps(): WriteStep[];
  /** The persisted variant of `subject` in a sticky experiment, or undefined. */
  assignment(experiment: string, subject: string): Promise<string | undefined>;
  /** Step persisting a first assignment (a concurrent first one wins; this one is then ignored). */
  assignStep(experiment: string, subject: string, variant: string, now: string): WriteStep;
}
