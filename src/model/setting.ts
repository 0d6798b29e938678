/**
 * A Setting (docs/api.md, "Settings, flags and experiments"): an opaque string value under a key,
 * as the settings service (src/settings/) hands it out and the settings store
 * (src/store/settings-store.ts) keeps it. Flag and experiment keys: src/settings/setting.ts.
 */
export interface Setting {
  key: string;
  /** opaque to the server */
  value: string;
  created: string;
  updated: string;
}
