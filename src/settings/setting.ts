/**
 * Settings, feature flags and experiments (this folder is their home). A Setting (docs/api.md,
 * "Settings, flags and experiments"): an opaque string value under a key; declared flag overrides
 * live under `flag:<name>` (`true`/`false`), experiment weight overrides under
 * `exp:<name>:weights`.
 */
export interface Setting {
  key: string;
  /** opaque to the server */
  value: string;
  created: string;
  updated: string;
}

/** The settings key of a declared flag's override. */
export const flagKey = (name: string): string => `flag:${name}`;
/** The settings key of an experiment's weight override. */
export const experimentWeightsKey = (name: string): string => `exp:${name}:weights`;
