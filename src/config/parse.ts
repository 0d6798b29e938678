/**
 * Value parsers shared by config loading (docs/configuration.md, "Server" and
 * "Logging"; docs/operations.md, "Command line").
 *
 * Each parser takes the name of where the value came from (an env var such as `SERVICE_HTTP` or a
 * flag such as `--http`) so the error can name it, and throws {@link ConfigError} on bad input.
 */

/**
 * An invalid configuration value. The message names the variable (or flag), the value and what
 * was expected, e.g. `invalid SERVICE_LOG_FORMAT "xml": expected one of text, json`.
 */
export class ConfigError extends Error {
  readonly variable: string;
  readonly value: string;
  readonly expected: string;

  constructor(variable: string, value: string, expected: string) {
    super(`invalid ${variable} ${JSON.stringify(value)}: expected ${expected}`);
    this.name = 'ConfigError';
    this.variable = variable;
    this.value = value;
    this.expected = expected;
  }
}

/** A value together with the name of the variable or flag it came from. */
export interface Sourced {
  name: string;
  value: string;
}

export type FlagValue = string | boolean | undefined;
export type Flags = Partial<Record<string, FlagValue>>;

/**
 * Picks a string setting: the flag `--<flag>` when given, else the env var when set and not
 * empty, else undefined.
 */
export function pick(flags: Flags, flag: string | null, env: NodeJS.ProcessEnv, variable: string): Sourced | undefined {
  if (flag !== null) {
    const f = flags[flag];
    if (typeof f === 'string') return { name: `--${flag}`, value: f };
  }
  const e = env[variable];
  if (e !== undefined && e !== '') return { name: variable, value: e };
  return undefined;
}

const TRUE = new Set(['true', '1', 'yes', 'on']);
const FALSE = new Set(['false', '0', 'no', 'off']);

/** Parses true/false/1/0/yes/no/on/off (case-insensitive). */
export function parseBool(src: Sourced): boolean {
  const v = src.value.trim().toLowerCase();
  if (TRUE.has(v)) return true;
  if (FALSE.has(v)) return false;
  throw new ConfigError(src.name, src.value, 'a boolean (true, false, 1, 0, yes, no, on, off)');
}

/** Parses a decimal integer in [min, max]. */
export function parseInteger(src: Sourced, min: number, max: number = Number.MAX_SAFE_INTEGER): number {
  const v = src.value.trim();
  const n = /^\d+$/.test(v) ? Number(v) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `an integer >= ${min}` : `an integer from ${min} to ${max}`;
    throw new ConfigError(src.name, src.value, range);
  }
  return n;
}

/** Parses one of a fixed set of words (case-insensitive); returns the canonical spelling. */
export function parseChoice<T extends string>(src: Sourced, choices: readonly T[]): T {
  const v = src.value.trim().toLowerCase();
  const hit = choices.find((c) => c === v);
  if (hit === undefined) throw new ConfigError(src.name, src.value, `one of ${choices.join(', ')}`);
  return hit;
}

const HOST_NAME = /^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$/;
const HOST_V6 = /^[0-9A-Fa-f:.]+$/;

/**
 * Parses `HOST:PORT` or `[IPV6]:PORT`; port 0 (pick a free port) to 65535. The returned host has
 * no brackets. An empty host is rejected so an all-interfaces bind is always spelled out.
 */
export function parseHostPort(src: Sourced): { host: string; port: number } {
  const fail = (): never => {
    throw new ConfigError(src.name, src.value, 'HOST:PORT such as 127.0.0.1:8090 or [::1]:8090, port 0-65535');
  };
  const v = src.value.trim();
  let host: string;
  let portText: string;
  if (v.startsWith('[')) {
    const close = v.indexOf(']');
    if (close < 0 || v[close + 1] !== ':') fail();
    host = v.slice(1, close);
    portText = v.slice(close + 2);
    if (!HOST_V6.test(host) || !host.includes(':')) fail();
  } else {
    const colon = v.lastIndexOf(':');
    if (colon <= 0) fail();
    host = v.slice(0, colon);
    portText = v.slice(colon + 1);
    if (!HOST_NAME.test(host)) fail();
  }
  if (!/^\d{1,5}$/.test(portText)) fail();
  const port = Number(portText);
  if (port > 65535) fail();
  return { host, port };
}
