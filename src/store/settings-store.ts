/**
 * The storage boundary of settings and experiment assignments (spec 1-core-api.md, "Setting",
 * "Feature flag and experiment"); implemented for both backends by src/store/shared/settings-sql.ts.
 */
import type { WriteStep } from './write-job.js';
import type { Setting } from '../settings/setting.js';

export interface SettingsRowStore {
  /** Every setting, by key. */
  all(): Setting[];
  /** Step creating or replacing a setting (`created` kept on replace). */
  putStep(key: string, value: string, now: string): WriteStep;
  /** Step deleting a setting; fails the job with `fail` when there is none. */
  deleteStep(key: string, fail: NonNullable<WriteStep['fail']>): WriteStep;
  /** The persisted variant of `subject` in a sticky experiment, or undefined. */
  assignment(experiment: string, subject: string): string | undefined;
  /** Step persisting a first assignment (a concurrent first one wins; this one is then ignored). */
  assignStep(experiment: string, subject: string, variant: string, now: string): WriteStep;
}
