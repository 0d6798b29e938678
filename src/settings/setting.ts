/**
 * Settings, feature flags and experiments (this folder is their home; the Setting row type is
 * src/model/setting.ts, which storage reads too). Declared flag overrides live under
 * `flag:<name>` (`true`/`false`), experiment weight overrides under `exp:<name>:weights`.
 */

/** The settings key of a declared flag's override. */
export const flagKey = (name: string): string => `flag:${name}`;
/** The settings key of an experiment's weight override. */
export const experimentWeightsKey = (name: string): string => `exp:${name}:weights`;
