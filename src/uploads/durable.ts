/**
 * The persistence mode of the upload store (docs/files.md, "Resumable uploads"): sessions that
 * survive a process restart.
 *
 * - Store format version 2 (`_uploadStore`, `_uploadSessions`, `_uploadPayloads`). A database with
 *   none of the tables starts a fresh store; a partial schema, a missing version marker or budgets,
 *   or another version (the experimental version 1 included) is refused and never rewritten.
 * - Creation pre-writes the payload as zero bytes (pages of UPLOAD_PAGE_BYTES); a chunk's pages
 *   and the new offset commit in one write job before the chunk is acknowledged; the record
 *   mutation and the completed receipt commit in one job, so a lost response is acknowledged
 *   after a restart.
 * - Recovery validates every row (value types, ids, metadata bounds, state, offset and payload
 *   relations, the earlier budgets) before anything is swept; invalid state fails the startup.
 *   Expired sessions are deleted without loading their payload; a session found committing
 *   becomes failed (never retried, hooks not replayed); receiving ones get their payload back.
 * - Budget changes are refused while unexpired sessions remain.
 * - The owner file `<db>.svc-uploads.lock` (owner-lock.ts) is held from right after the
 *   database opens until the store closes.
 */
import type { SqlValue } from '../store/bind.js';
import type { StepResult, WriteStep } from '../store/write-job.js';
import { UPLOAD_PAGE_BYTES, UPLOAD_STORE_VERSION, type UploadRow, type UploadRowStore } from '../store/upload-store.js';
import { DURABLE_MAX_UPLOAD_BYTES, type UploadBudgets } from './budgets.js';
import { acquireUploadOwner, type UploadOwnerLock } from './owner-lock.js';
import { MAX_SESSION_METADATA_BYTES, type UploadPersistence, type UploadSession, type UploadState } from './upload-store.js';

/** The durable store cannot start on this database (the message says why). */
export class UploadStoreError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UploadStoreError';
  }
}

const STATES = new Set<UploadState>(['receiving', 'committing', 'completed', 'failed']);
const SESSION_ID = /^[A-Za-z0-9_-]{32}$/;
const RECORD_ID = /^[a-z0-9]{15}$/;
const STABLE_ID = /^[A-Za-z0-9_]{1,64}$/;

/** The budgets that decide whether stored sessions still fit (durable is implied). */
const budgetsJson = (b: UploadBudgets): string =>
  JSON.stringify({ max_sessions: b.max_sessions, max_sessions_per_principal: b.max_sessions_per_principal, max_upload_bytes: b.max_upload_bytes, max_total_bytes: b.max_total_bytes, max_chunk_bytes: b.max_chunk_bytes, ttl_seconds: b.ttl_seconds });

/** Bytes of a session's identifying metadata (the 2,295-byte bound). */
export function metadataBytes(s: Pick<UploadSession, 'id' | 'principalCollection' | 'principalId' | 'collectionId' | 'recordId' | 'fieldId' | 'filename' | 'mimetype'>): number {
  return [s.id, s.principalCollection, s.principalId, s.collectionId, s.recordId, s.fieldId, s.filename, s.mimetype].reduce((n, v) => n + Buffer.byteLength(v), 0);
}

/**
 * What the persistence mode needs of storage: the upload tables' statements
 * (src/store/upload-store.ts), the writer that commits their steps, one point read (the
 * connection's length-limit probe) and the end of the reader's snapshot after the open's own
 * writes. Built over the Store by the composition root (src/boot/repositories.ts); a test may
 * give a small fake.
 */
export interface UploadRepository {
  /** the upload statements of the open database's backend */
  rows: UploadRowStore;
  /** Commits `steps` as one write job (SqlWriter.write). @throws the writer's error when the job fails */
  write(steps: WriteStep[]): Promise<StepResult[]>;
  /** The first row of `sql` (SqlReader.get), or undefined. @throws the reader's error */
  get(sql: string, params: SqlValue[]): Promise<unknown[] | undefined>;
  /** Ends the reader's current read snapshot (SqlReader.endSnapshot): the next read sees the latest commit. */
  endSnapshot(): void;
}

/**
 * Opens the persistence mode on `repo` (database at `dbPath`): takes the owner file, checks or
 * creates the store, recovers its sessions.
 * @throws UploadOwnerError when another live process owns the store; UploadStoreError for a
 *   refused store format, invalid recovered state, or a budget change while sessions remain
 */
export async function openDurableUploads(repo: UploadRepository, dbPath: string, budgets: UploadBudgets, now = Date.now()): Promise<{ persistence: UploadPersistence; restored: UploadSession[] }> {
  await checkLengthLimit(repo, budgets);
  const lock = acquireUploadOwner(dbPath);
  try {
    const restored = await recover(repo, budgets, now);
    return { persistence: new SqlitePersistence(repo, lock), restored };
  } catch (err) {
    lock.release();
    throw err;
  }
}

/** The connection's real length limit must hold the largest payload page and the budgets' cap. */
async function checkLengthLimit(repo: UploadRepository, budgets: UploadBudgets): Promise<void> {
  if (budgets.max_upload_bytes > DURABLE_MAX_UPLOAD_BYTES) throw new UploadStoreError(`max_upload_bytes ${budgets.max_upload_bytes} is above the persistence mode's cap of ${DURABLE_MAX_UPLOAD_BYTES} bytes`);
  try {
    // zeroblob is not materialised: this only asks the connection whether such a value may exist
    await repo.get('SELECT length(zeroblob(?))', [budgets.max_upload_bytes + 16 * 1024 + 256]);
  } catch (err) {
    throw new UploadStoreError(`this database connection cannot hold a payload of max_upload_bytes (${budgets.max_upload_bytes}) plus its metadata: ${err instanceof Error ? err.message : String(err)}`);
  }
}

async function recover(repo: UploadRepository, budgets: UploadBudgets, now: number): Promise<UploadSession[]> {
  const sql = repo.rows;
  const schema = await sql.schemaState();
  if (schema.kind === 'absent') {
    await repo.write(sql.createSteps(budgetsJson(budgets)));
    repo.endSnapshot();
    return [];
  }
  if (schema.kind === 'partial') throw new UploadStoreError(`the upload store is incomplete (only ${schema.tables.join(', ')}); it is refused and left as it is`);
  const version = schema.settings.get('version');
  if (version === undefined) throw new UploadStoreError('the upload store has no version marker; it is refused and left as it is');
  if (version !== String(UPLOAD_STORE_VERSION)) throw new UploadStoreError(`the upload store has format version ${version}; this server reads version ${UPLOAD_STORE_VERSION} only and leaves it as it is`);
  const storedBudgets = schema.settings.get('budgets');
  if (storedBudgets === undefined) throw new UploadStoreError('the upload store has no budgets row; it is refused and left as it is');
  let earlier: UploadBudgets;
  try {
    earlier = { ...JSON.parse(storedBudgets), durable: true } as UploadBudgets;
  } catch {
    throw new UploadStoreError('the upload store\'s budgets are not valid JSON');
  }

  // validate everything before any sweep
  const rows = await sql.sessions();
  const sessions = rows.map((r) => validRow(r, earlier));
  const perPrincipal = new Map<string, number>();
  let reserved = 0;
  for (const s of sessions) {
    const key = `${s.principalCollection}/${s.principalId}`;
    perPrincipal.set(key, (perPrincipal.get(key) ?? 0) + 1);
    if (s.state === 'receiving' || s.state === 'committing') reserved += s.length;
    const pages = await sql.pageSizes(s.id);
    if (s.state === 'completed' || s.state === 'failed') {
      if (pages.length) throw new UploadStoreError(`upload session ${s.id} is ${s.state} but keeps payload rows`);
      continue;
    }
    const want = Math.ceil(s.length / UPLOAD_PAGE_BYTES);
    const ok = pages.length === want && pages.every(([p, n], i) => p === i && n === Math.min(UPLOAD_PAGE_BYTES, s.length - i * UPLOAD_PAGE_BYTES));
    if (!ok) throw new UploadStoreError(`upload session ${s.id} has a payload that does not match its length ${s.length}`);
  }
  if (sessions.length > earlier.max_sessions) throw new UploadStoreError(`the upload store holds ${sessions.length} sessions, more than its max_sessions ${earlier.max_sessions}`);
  for (const [key, n] of perPrincipal) if (n > earlier.max_sessions_per_principal) throw new UploadStoreError(`principal ${key} holds ${n} upload sessions, more than max_sessions_per_principal ${earlier.max_sessions_per_principal}`);
  if (reserved > earlier.max_total_bytes) throw new UploadStoreError(`the upload store retains ${reserved} payload bytes, more than max_total_bytes ${earlier.max_total_bytes}`);

  const live = sessions.filter((s) => s.expiresAt > now);
  if (live.length && budgetsJson(earlier) !== budgetsJson(budgets)) {
    throw new UploadStoreError(`the upload budgets changed while ${live.length} unexpired upload session(s) remain (stored ${budgetsJson(earlier)}, configured ${budgetsJson(budgets)}); start with the earlier budgets until they expire (at the latest ${new Date(Math.max(...live.map((s) => s.expiresAt))).toISOString()})`);
  }

  // the sweep: expired sessions go without loading their payload; committing ones fail
  const steps: WriteStep[] = [];
  const expired = sessions.filter((s) => s.expiresAt <= now).map((s) => s.id);
  steps.push(...sql.deleteSteps(expired), ...sql.deleteSteps(await sql.orphanPayloads()));
  for (const s of live) {
    if (s.state === 'committing') {
      steps.push(...sql.stateSteps(s.id, 'committing', 'failed', true));
      s.state = 'failed';
    }
  }
  if (budgetsJson(earlier) !== budgetsJson(budgets)) steps.push(sql.budgetsStep(budgetsJson(budgets)));
  if (steps.length) {
    await repo.write(steps);
    repo.endSnapshot();
  }
  for (const s of live) {
    if (s.state !== 'receiving') continue;
    const payload = Buffer.allocUnsafeSlow(s.length);
    for (let p = 0, at = 0; at < s.length; p++, at += UPLOAD_PAGE_BYTES) {
      const page = await sql.page(s.id, p);
      if (!page) throw new UploadStoreError(`upload session ${s.id} lost payload page ${p}`);
      payload.set(page, at);
    }
    s.payload = payload;
  }
  return live;
}

/** A stored row as a session (payload not loaded), or UploadStoreError naming what is wrong. */
function validRow(r: UploadRow, earlier: UploadBudgets): UploadSession {
  const bad = (what: string) => new UploadStoreError(`upload session row ${typeof r.id === 'string' ? r.id : '?'} is invalid: ${what}`);
  const str = (v: unknown, name: string): string => {
    if (typeof v !== 'string') throw bad(`${name} is not text`);
    return v;
  };
  const int = (v: unknown, name: string): number => {
    const n = typeof v === 'bigint' ? Number(v) : v;
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) throw bad(`${name} is not a non-negative integer`);
    return n;
  };
  const s: UploadSession = {
    id: str(r.id, 'id'),
    principalCollection: str(r.principalCollection, 'principalCollection'),
    principalId: str(r.principalId, 'principalId'),
    collectionId: str(r.collectionId, 'collectionId'),
    recordId: str(r.recordId, 'recordId'),
    fieldId: str(r.fieldId, 'fieldId'),
    filename: str(r.filename, 'filename'),
    mimetype: str(r.mimetype, 'mimetype'),
    length: int(r.length, 'length'),
    offset: int(r.offset, 'offset'),
    createdAt: int(r.created, 'created'),
    expiresAt: int(r.expires, 'expires'),
    state: str(r.state, 'state') as UploadState,
    // the creating address is not stored: a restored session counts against no address share
    address: '',
    payload: null,
    busy: false,
  };
  if (!SESSION_ID.test(s.id)) throw bad('id is not a session id');
  if (!STABLE_ID.test(s.principalCollection) || !STABLE_ID.test(s.collectionId) || !STABLE_ID.test(s.fieldId)) throw bad('a collection or field id is malformed');
  if (!RECORD_ID.test(s.principalId) || !RECORD_ID.test(s.recordId)) throw bad('a record id is malformed');
  if (!s.filename || metadataBytes(s) > MAX_SESSION_METADATA_BYTES) throw bad(`metadata is empty or over ${MAX_SESSION_METADATA_BYTES} bytes`);
  if (!STATES.has(s.state)) throw bad(`state "${s.state}" is unknown`);
  if (s.length < 1 || s.length > earlier.max_upload_bytes) throw bad(`length ${s.length} is outside 1..${earlier.max_upload_bytes}`);
  if (s.offset > s.length) throw bad(`offset ${s.offset} is past length ${s.length}`);
  if ((s.state === 'committing' || s.state === 'completed') && s.offset !== s.length) throw bad(`a ${s.state} session needs its full offset`);
  if (s.expiresAt <= s.createdAt || s.expiresAt - s.createdAt > earlier.ttl_seconds * 1000) throw bad('its expiry does not follow from its creation and ttl_seconds');
  return s;
}

/** UploadPersistence over the writer (each call one write job, resolved after its commit). */
class SqlitePersistence implements UploadPersistence {
  constructor(private repo: UploadRepository, private lock: UploadOwnerLock) {}

  async insert(s: UploadSession): Promise<void> {
    await this.repo.write(this.repo.rows.insertSteps({
      id: s.id, principalCollection: s.principalCollection, principalId: s.principalId, collectionId: s.collectionId, recordId: s.recordId,
      fieldId: s.fieldId, filename: s.filename, mimetype: s.mimetype, length: s.length, created: s.createdAt, expires: s.expiresAt,
    }));
  }

  async append(s: UploadSession, from: number, to: number): Promise<void> {
    const pages: Array<[number, Buffer]> = [];
    const payload = s.payload!;
    for (let p = Math.floor(from / UPLOAD_PAGE_BYTES); p * UPLOAD_PAGE_BYTES < to; p++) {
      const start = p * UPLOAD_PAGE_BYTES;
      // a copy: a view would take the whole payload's buffer with it to the writer thread
      pages.push([p, Buffer.from(payload.subarray(start, Math.min(start + UPLOAD_PAGE_BYTES, s.length)))]);
    }
    await this.repo.write(this.repo.rows.appendSteps(s.id, from, to, pages));
  }

  async setState(s: UploadSession, from: UploadState, to: UploadState, dropPayload: boolean): Promise<void> {
    await this.repo.write(this.repo.rows.stateSteps(s.id, from, to, dropPayload));
  }

  receiptSteps(s: UploadSession): WriteStep[] {
    return this.repo.rows.stateSteps(s.id, 'committing', 'completed', true);
  }

  async remove(ids: string[]): Promise<void> {
    await this.repo.write(this.repo.rows.deleteSteps(ids));
  }

  close(): void {
    this.lock.release();
  }
}
