/**
 * Upload budgets (docs/files.md, "Resumable uploads"): the bounds of the resumable upload
 * store. An embedding program declares them in its app definition's `uploads` group (checked by
 * defineApp, before any port opens); the standalone `svc` takes the defaults, or the
 * `SERVICE_UPLOAD_*` environment variables.
 */

/**
 * The budget group's keys, as docs/files.md, "Resumable uploads" names them. Sizes in bytes,
 * `ttl_seconds` in seconds.
 */
export interface UploadBudgets {
  /** live sessions (any state) at once; positive, at most 1,024 */
  max_sessions: number;
  /** live sessions of one principal; positive, at most max_sessions */
  max_sessions_per_principal: number;
  /**
   * live sessions created from one client address (the trusted client IP, see addressShare);
   * positive, at most max_sessions; absent: half of max_sessions, rounded up. Not one of the
   * budgets the other keys bound: it bounds what a few sign-ups from one address can take.
   */
  max_sessions_per_address?: number;
  /** bytes one upload may declare; max_chunk_bytes ≤ it ≤ max_total_bytes, at most 1 GiB */
  max_upload_bytes: number;
  /** bytes reserved across every live session; at most 1 GiB */
  max_total_bytes: number;
  /** bytes one PATCH may carry */
  max_chunk_bytes: number;
  /** lifetime of a session from its creation; at most one day */
  ttl_seconds: number;
  /** the SQLite persistence mode ("Persistence mode") */
  durable: boolean;
}

export const MIB = 1024 * 1024;
export const GIB = 1024 * MIB;

/** The defaults (docs/configuration.md, "Resumable uploads"). */
export const DEFAULT_UPLOAD_BUDGETS: Readonly<UploadBudgets> = Object.freeze({
  max_sessions: 8,
  max_sessions_per_principal: 2,
  max_upload_bytes: 8 * MIB,
  max_total_bytes: 32 * MIB,
  max_chunk_bytes: 1 * MIB,
  ttl_seconds: 900,
  durable: false,
});

/**
 * Largest payload of the persistence mode: the database row limit (1,000,000,000 bytes) minus
 * 16 KiB of metadata and 256 bytes for other fields and the row header.
 */
export const DURABLE_MAX_UPLOAD_BYTES = 1_000_000_000 - 16 * 1024 - 256;

const NUMERIC_KEYS = ['max_sessions', 'max_sessions_per_principal', 'max_sessions_per_address', 'max_upload_bytes', 'max_total_bytes', 'max_chunk_bytes', 'ttl_seconds'] as const;

/**
 * The sessions one client address may hold at once: `max_sessions_per_address`, or half of
 * `max_sessions` rounded up when it is absent (docs/files.md, "Resumable uploads"), so one address
 * never takes every slot while max_sessions is over 1.
 */
export function addressShare(b: Pick<UploadBudgets, 'max_sessions' | 'max_sessions_per_address'>): number {
  return b.max_sessions_per_address ?? Math.ceil(b.max_sessions / 2);
}
export const BUDGET_KEYS: readonly string[] = [...NUMERIC_KEYS, 'durable'];

/**
 * The problems of a budget group (empty when valid): unknown keys, values that are not positive
 * integers, and the constraints between them.
 */
export function budgetProblems(group: Record<string, unknown>, prefix = 'uploads'): string[] {
  const out: string[] = [];
  for (const k of Object.keys(group)) if (!BUDGET_KEYS.includes(k)) out.push(`${prefix}: unknown key "${k}" (known: ${BUDGET_KEYS.join(', ')})`);
  for (const k of NUMERIC_KEYS) {
    const v = group[k];
    if (v !== undefined && !(typeof v === 'number' && Number.isSafeInteger(v) && v > 0)) out.push(`${prefix}.${k} must be a positive integer`);
  }
  if (group.durable !== undefined && typeof group.durable !== 'boolean') out.push(`${prefix}.durable must be true or false`);
  if (out.length) return out;
  const b = { ...DEFAULT_UPLOAD_BUDGETS, ...group } as UploadBudgets;
  if (b.max_sessions > 1024) out.push(`${prefix}.max_sessions must be at most 1024`);
  if (b.max_sessions_per_principal > b.max_sessions) out.push(`${prefix}.max_sessions_per_principal must be at most max_sessions (${b.max_sessions})`);
  if (b.max_sessions_per_address !== undefined && b.max_sessions_per_address > b.max_sessions) out.push(`${prefix}.max_sessions_per_address must be at most max_sessions (${b.max_sessions})`);
  if (b.max_chunk_bytes > b.max_upload_bytes) out.push(`${prefix}.max_chunk_bytes must be at most max_upload_bytes (${b.max_upload_bytes})`);
  if (b.max_upload_bytes > b.max_total_bytes) out.push(`${prefix}.max_upload_bytes must be at most max_total_bytes (${b.max_total_bytes})`);
  if (b.max_upload_bytes > GIB) out.push(`${prefix}.max_upload_bytes must be at most 1 GiB (${GIB})`);
  if (b.max_total_bytes > GIB) out.push(`${prefix}.max_total_bytes must be at most 1 GiB (${GIB})`);
  if (b.ttl_seconds > 86_400) out.push(`${prefix}.ttl_seconds must be at most one day (86400)`);
  if (b.durable && b.max_upload_bytes > DURABLE_MAX_UPLOAD_BYTES) out.push(`${prefix}.max_upload_bytes must be at most ${DURABLE_MAX_UPLOAD_BYTES} in the persistence mode`);
  return out;
}

/** The environment variable of each numeric key (`SERVICE_UPLOAD_MAX_SESSIONS`, …). */
export const BUDGET_ENV: Readonly<Record<(typeof NUMERIC_KEYS)[number], string>> = Object.freeze({
  max_sessions: 'SERVICE_UPLOAD_MAX_SESSIONS',
  max_sessions_per_principal: 'SERVICE_UPLOAD_MAX_SESSIONS_PER_PRINCIPAL',
  max_sessions_per_address: 'SERVICE_UPLOAD_MAX_SESSIONS_PER_ADDRESS',
  max_upload_bytes: 'SERVICE_UPLOAD_MAX_UPLOAD_BYTES',
  max_total_bytes: 'SERVICE_UPLOAD_MAX_TOTAL_BYTES',
  max_chunk_bytes: 'SERVICE_UPLOAD_MAX_CHUNK_BYTES',
  ttl_seconds: 'SERVICE_UPLOAD_TTL_SECONDS',
});

/**
 * The budgets of a server: the defaults, then the `SERVICE_UPLOAD_*` environment, then an app's
 * `uploads` group; `durable` as given.
 * @throws Error listing the problems when the result is not a valid budget group
 */
export function resolveBudgets(env: NodeJS.ProcessEnv, group: Partial<UploadBudgets> | undefined, durable: boolean): UploadBudgets {
  const merged: Record<string, unknown> = {};
  for (const k of NUMERIC_KEYS) {
    const raw = env[BUDGET_ENV[k]];
    if (raw !== undefined && raw !== '') merged[k] = /^\d+$/.test(raw.trim()) ? Number(raw.trim()) : raw;
  }
  Object.assign(merged, group ?? {});
  merged.durable = durable;
  const problems = budgetProblems(merged);
  if (problems.length) throw new Error(`invalid upload budgets: ${problems.join('; ')}`);
  return { ...DEFAULT_UPLOAD_BUDGETS, ...merged } as UploadBudgets;
}
