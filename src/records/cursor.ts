/**
 * Cursor tokens for keyset paging (docs/lists.md, "Cursor paging"; docs/configuration.md, "Lists";
 * tokens over 2,048 characters answer 400).
 *
 * A cursor names a listing (a binding hash over collection, sort, filter and search), a direction
 * (`n`: rows after the boundary, `p`: rows before it) and the boundary row's sort-key values.
 * Three token kinds carry it:
 * - stateless: base64url(JSON) — checked structurally and against the request's binding;
 * - signed: the stateless text + `.` + base64url(HMAC-SHA256) keyed by a key derived from the
 *   persisted token secret; a token whose tag does not verify is 400;
 * - stateful: 22 random base64url characters + the direction letter; the boundaries of one page
 *   live in `_cursorStates` until their TTL passes; an unknown or expired id is 410.
 * Key values round-trip exactly: strings and floats as JSON, 64-bit integers as `{"i":"…"}`,
 * blobs as `{"b":"<base64url>"}`. A boundary whose values would make a stateless or signed token
 * longer than the limit is carried as the boundary record's id instead (`r`); the reader then
 * looks its values up again (400 if that record is gone).
 */
import { DELETE_EXPIRED_CURSORS, INSERT_CURSOR, SELECT_CURSOR } from '../store/sql/cursor-sql.js';
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { ApiError } from '../errors/api-error.js';
import { bindAll, type SqlValue } from '../store/bind.js';
import type { WriteStep } from '../store/write-job.js';
import type { KeyValue } from '../store/sql/keyset.js';

export type CursorTokenKind = 'stateless' | 'signed' | 'stateful';

/** The boundary of a page: its sort-key values and its record id. */
export interface Boundary {
  keys: KeyValue[];
  id: string;
}

/** A decoded cursor. Exactly one of `keys` (the values) and `recordId` (a fallback) is set. */
export interface CursorState {
  binding: string;
  dir: 'n' | 'p';
  keys?: KeyValue[];
  recordId?: string;
}

/** The parts of the store a stateful codec needs: a point read and a write job. */
export interface CursorStateStore {
  get(sql: string, params: SqlValue[]): Promise<unknown[] | undefined>;
  write(steps: WriteStep[]): Promise<unknown>;
}

/** Longest token accepted (docs/lists.md, "Cursor paging"). */
export const MAX_CURSOR_LENGTH = 2048;
const MAX_KEYS = 32;
const STATE_ID = /^[A-Za-z0-9_-]{22}[np]$/;

const malformed = (): ApiError => ApiError.badRequest('Invalid cursor: the token is malformed.');

/** Hash of what a cursor is bound to (16 base64url characters). */
export function bindingHash(parts: string[]): string {
  return createHash('sha256').update(parts.join('\u0000')).digest().subarray(0, 12).toString('base64url');
}

function encodeValue(v: KeyValue): unknown {
  if (typeof v === 'bigint') return { i: v.toString() };
  if (v instanceof Uint8Array) return { b: Buffer.from(v).toString('base64url') };
  return v;
}

function decodeValue(v: unknown): KeyValue {
  if (v === null || typeof v === 'string') return v;
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  if (typeof v === 'object' && !Array.isArray(v)) {
    const o = v as Record<string, unknown>;
    const keys = Object.keys(o);
    if (keys.length === 1 && typeof o.i === 'string' && /^-?\d{1,19}$/.test(o.i)) {
      const n = BigInt(o.i);
      if (n >= -(2n ** 63n) && n < 2n ** 63n) return n;
    }
    if (keys.length === 1 && typeof o.b === 'string' && /^[A-Za-z0-9_-]*$/.test(o.b)) return Buffer.from(o.b, 'base64url');
  }
  throw malformed();
}

/** The JSON shape of one boundary: `{h, d, k}` or `{h, d, r}`. */
function toWire(binding: string, dir: 'n' | 'p', b: Boundary, byId: boolean): Record<string, unknown> {
  return byId ? { h: binding, d: dir, r: b.id } : { h: binding, d: dir, k: b.keys.map(encodeValue) };
}

function fromWire(w: unknown): CursorState {
  if (typeof w !== 'object' || w === null || Array.isArray(w)) throw malformed();
  const o = w as Record<string, unknown>;
  if (typeof o.h !== 'string' || (o.d !== 'n' && o.d !== 'p')) throw malformed();
  if (Array.isArray(o.k) && o.k.length > 0 && o.k.length <= MAX_KEYS && o.r === undefined) {
    return { binding: o.h, dir: o.d, keys: o.k.map(decodeValue) };
  }
  if (typeof o.r === 'string' && /^[A-Za-z0-9_]{1,64}$/.test(o.r) && o.k === undefined) return { binding: o.h, dir: o.d, recordId: o.r };
  throw malformed();
}

/** Makes and reads cursor tokens of one kind. */
export class CursorCodec {
  private readonly key: Buffer | null;

  /**
   * @param kind   token kind (SERVICE_CURSOR_TOKEN)
   * @param secret the persisted token secret (signed tokens)
   * @param ttlS   lifetime of stateful cursors, seconds
   * @param states point reads and write jobs on `_cursorStates` (stateful tokens)
   */
  constructor(readonly kind: CursorTokenKind, secret: Buffer | null, private ttlS: number, private states: CursorStateStore | null) {
    this.key = secret ? createHmac('sha256', secret).update('svc cursor tokens v1').digest() : null;
    if (kind === 'signed' && !this.key) throw new Error('signed cursor tokens need the token secret');
    if (kind === 'stateful' && !states) throw new Error('stateful cursor tokens need the state store');
  }

  /**
   * Tokens for the next and previous pages (null where there is none). `byId`: the sort reads a
   * private column, so a stateless or signed token carries the boundary's record id, never its
   * values (readable base64), and the reader looks them up again within the caller's scope.
   */
  async issue(binding: string, next: Boundary | null, prev: Boundary | null, byId = false): Promise<{ next: string | null; prev: string | null }> {
    if (this.kind !== 'stateful') return { next: next && this.encode(binding, 'n', next, byId), prev: prev && this.encode(binding, 'p', prev, byId) };
    if (!next && !prev) return { next: null, prev: null };
    const id = randomBytes(16).toString('base64url');
    const payload = JSON.stringify({ n: next && toWire(binding, 'n', next, false), p: prev && toWire(binding, 'p', prev, false) });
    const now = Date.now();
    await this.states!.write([
      { sql: DELETE_EXPIRED_CURSORS, params: [now] },
      { sql: INSERT_CURSOR, params: bindAll([id, payload, now + this.ttlS * 1000]) },
    ]);
    return { next: next && `${id}n`, prev: prev && `${id}p` };
  }

  private encode(binding: string, dir: 'n' | 'p', b: Boundary, byId: boolean): string {
    if (byId) return this.wrap(JSON.stringify(toWire(binding, dir, b, true)));
    let token = this.wrap(JSON.stringify(toWire(binding, dir, b, false)));
    if (token.length > MAX_CURSOR_LENGTH) token = this.wrap(JSON.stringify(toWire(binding, dir, b, true)));
    return token;
  }

  private wrap(json: string): string {
    const body = Buffer.from(json).toString('base64url');
    return this.kind === 'signed' ? `${body}.${this.tag(body)}` : body;
  }

  private tag(body: string): string {
    return createHmac('sha256', this.key!).update(body).digest('base64url');
  }

  /**
   * Decodes a token (the binding is the caller's to check): at once, or a promise for a stateful
   * token (its state is read from the store).
   * @throws ApiError 400 malformed, oversized or forged token; 410 unknown or expired stateful id
   *   (a stateful token's 410 as a rejection)
   */
  read(token: string): CursorState | Promise<CursorState> {
    if (token.length > MAX_CURSOR_LENGTH) throw ApiError.badRequest(`Invalid cursor: tokens are at most ${MAX_CURSOR_LENGTH} characters.`);
    if (this.kind === 'stateful') return this.readState(token);
    let body = token;
    if (this.kind === 'signed') {
      const dot = token.indexOf('.');
      if (dot < 0) throw malformed();
      body = token.slice(0, dot);
      const given = Buffer.from(token.slice(dot + 1), 'base64url');
      const want = Buffer.from(this.tag(body), 'base64url');
      if (given.length !== want.length || !timingSafeEqual(given, want)) throw ApiError.badRequest('Invalid cursor: the signature does not match.');
    }
    if (!/^[A-Za-z0-9_-]+$/.test(body)) throw malformed();
    let wire: unknown;
    try {
      wire = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
    } catch {
      throw malformed();
    }
    return fromWire(wire);
  }

  private readState(token: string): CursorState | Promise<CursorState> {
    if (!STATE_ID.test(token)) throw malformed();
    return this.states!.get(SELECT_CURSOR, [token.slice(0, 22)]).then((row) => stateOf(token, row));
  }
}

/** A stateful token's state from its `_cursorStates` row. @throws ApiError 410 when unknown or expired */
function stateOf(token: string, row: unknown[] | undefined): CursorState {
  if (!row || Number(row[1]) <= Date.now()) throw new ApiError(410, 'gone', 'The cursor is unknown or has expired; start again from the first page.');
  const payload = JSON.parse(String(row[0])) as { n: unknown; p: unknown };
  const wire = token.endsWith('n') ? payload.n : payload.p;
  if (!wire) throw new ApiError(410, 'gone', 'The cursor is unknown or has expired; start again from the first page.');
  return fromWire(wire);
}
