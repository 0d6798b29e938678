/**
 * Second factors (docs/auth.md, "Two-factor sign-in", and the
 * pending rows of docs/api.md, "Two-factor"): TOTP, passkeys as a factor, recovery codes, and the
 * collection policy `options.auth.two_factor` (`disabled`, `optional`, `required`).
 *
 * - After a primary login (password, OAuth2, magic link, OTP) {@link TwoFactor.gate} decides: a
 *   record with factors (policy optional or required) must prove one (`factor_required`); under
 *   `required` a record without any must enroll one (`enrollment_required`). The answer carries a
 *   pending token and no session. A passkey sign-in with user verification (UV) is itself two
 *   factors and passes; with user presence only it is one factor, and a factor other than that
 *   passkey is asked.
 * - A pending attempt lives five minutes and allows five proofs; every proof also counts against
 *   the account (ten per five minutes, stored, across new primary logins and whether or not the
 *   global limiter is on). A proof is counted (reserved) before it is checked, in one write, so
 *   parallel proofs cannot outrun either limit. Invalid proofs are 401; an exhausted account is 429.
 * - Success issues a session marked two-factor (token claim `mf`) and a management token (five
 *   minutes, single use) that may enroll another factor, replace recovery codes or remove a
 *   factor. Enrolling the first factor issues ten recovery codes, shown once, stored as
 *   HMAC-SHA256 under the server secret, each good once.
 * - Every factor change bumps the record's token epoch and wipes its session rows (ending every
 *   session) and drops its pending attempts; a `required` policy refuses tokens without the
 *   two-factor claim (AuthService.resolve), so turning it on ends primary-only sessions.
 * - TOTP: Base32 secret, SHA1, six digits, 30 s (otplib), one adjacent step accepted each way,
 *   an accepted step never accepted again; seeds are encrypted at rest with the data directory's
 *   key (AES-256-GCM, bound to the factor row).
 */
import { createHash, createHmac, randomInt, timingSafeEqual } from 'node:crypto';
import { ApiError, knownApiError } from '../errors/api-error.js';
import type { Collection } from '../model/schema.js';
import type { TwoFactorRepository } from '../context/auth-repositories.js';
import type { MfaAttemptRow, PasskeyRow } from '../store/auth-store.js';
import type { WriteStep } from '../store/write-job.js';
import { bindValue } from '../store/bind.js';
import { newId, randomToken } from '../records/ids.js';
import { nowDate } from '../collections/fields/index.js';
import { decryptStored, encryptStored } from '../records/encryption.js';
import type { WebAuthnMethod } from './methods/webauthn.js';
import type { SignInTag } from './methods/method.js';

type Otplib = typeof import('otplib');
let otpLibrary: Promise<Otplib> | null = null;

/**
 * otplib, imported on the first TOTP ceremony rather than at start for its resident size
 * (bench/README.md, "Libraries loaded on first use").
 */
function otplib(): Promise<Otplib> {
  otpLibrary ??= import('otplib');
  return otpLibrary;
}

/** Attempt lifetime and tries, the account limit, the management capability, recovery codes. */
export const MFA_ATTEMPT_TTL_MS = 5 * 60_000;
export const MFA_ATTEMPT_TRIES = 5;
export const MFA_ACCOUNT_LIMIT = 10;
export const MFA_ACCOUNT_WINDOW_MS = 5 * 60_000;
export const MFA_MANAGE_TTL_MS = 5 * 60_000;
export const RECOVERY_CODE_COUNT = 10;

export type TwoFactorPolicy = 'disabled' | 'optional' | 'required';
export type FactorKind = 'totp' | 'webauthn';

/** What a primary login answers instead of a session when a second step is needed. */
export interface PendingLogin {
  status: 'factor_required' | 'enrollment_required';
  pendingToken: string;
  /** seconds */
  expiresIn: number;
  /** factor_required: the record's factor kinds; enrollment_required: the kinds it may enroll */
  factors: FactorKind[];
  /** unused recovery codes of the record */
  recoveryCodes: number;
}

/**
 * A ceremony's outcome: a JSON answer, a new session for the record, or nothing (204). A
 * session's `authTime` (epoch seconds) is the primary sign-in it comes from: now when it completes
 * a sign-in, the earlier session's when it comes from a management token or a signed-in `enroll`
 * (unknown: left out).
 */
export type CeremonyOutcome =
  | { kind: 'json'; body: unknown }
  | { kind: 'session'; record: Record<string, unknown>; managementToken: string; recoveryCodes?: string[]; method: SignInTag; authTime?: number }
  | { kind: 'none' };

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const sha256 = (s: string) => createHash('sha256').update(s).digest();
const TOTP_FIELD = 'totp';
const PENDING_FIELD = 'totp-pending';
const BAD_TOKEN = () => ApiError.unauthorized('The pending token is invalid, expired or used up; sign in again.');
const BAD_PROOF = () => ApiError.unauthorized('The second-factor proof is invalid.');

/** The collection's two-factor policy (`disabled` when unset). */
export function twoFactorPolicy(c: Collection): TwoFactorPolicy {
  const p = c.options.auth?.two_factor;
  return p === 'optional' || p === 'required' ? p : 'disabled';
}

/** Second factors and the two-factor policy (this module's header) over a TwoFactorRepository. */
export class TwoFactor {
  constructor(
    private repo: TwoFactorRepository,
    private secret: Buffer,
    private webauthn: WebAuthnMethod,
    private loadRecord: (c: Collection, id: string) => Promise<Record<string, unknown> | null>,
  ) {}

  /** The factor kinds a record has; `exceptPasskey`: a credential that does not count (one just used to sign in). */
  async factorsOf(c: Collection, recordId: string, exceptPasskey?: string): Promise<FactorKind[]> {
    const out: FactorKind[] = [];
    if ((await this.repo.mfa.totpFactors(c.id, recordId)).length) out.push('totp');
    if ((await this.repo.passkeys.list(c.id, recordId)).some((k) => k.id !== exceptPasskey)) out.push('webauthn');
    return out;
  }

  /** The kinds a record of `c` may enroll: TOTP, and passkeys when the relying party is configured. */
  available(c: Collection): FactorKind[] {
    return this.webauthn.hasRelyingParty(c) ? ['totp', 'webauthn'] : ['totp'];
  }

  /** True when a session for `recordId` must carry the two-factor claim. */
  async needsFactor(c: Collection, recordId: string): Promise<boolean> {
    const policy = twoFactorPolicy(c);
    if (policy === 'disabled') return false;
    return policy === 'required' || (await this.factorsOf(c, recordId)).length > 0;
  }

  /**
   * After a primary login: null to sign in at once, else the pending answer (and a new attempt).
   * `usedPasskey`: the sign-in was a passkey without user verification (one factor), this
   * credential; it is not offered as the second factor, and when the account has no other factor
   * under `required` the answer is still factor_required (recovery codes may prove it), never an
   * enrollment that would let one factor enroll a second.
   */
  async gate(c: Collection, recordId: string, method: SignInTag, usedPasskey?: string): Promise<PendingLogin | null> {
    const policy = twoFactorPolicy(c);
    if (policy === 'disabled') return null;
    const factors = await this.factorsOf(c, recordId, usedPasskey);
    if (factors.length || (usedPasskey !== undefined && policy === 'required')) return this.pending(c, recordId, 'login', 'factor_required', factors, method, usedPasskey);
    if (policy === 'required') return this.pending(c, recordId, 'enroll', 'enrollment_required', this.available(c), method);
    return null;
  }

  /**
   * A new pending attempt and its answer. Its data keeps `method` (the sign-in's tag),
   * `usedPasskey` (see gate) and `authTime` (the sign-in time a `refresh`-tagged attempt passes
   * on to its session).
   */
  private async pending(c: Collection, recordId: string, purpose: MfaAttemptRow['purpose'], status: PendingLogin['status'], factors: FactorKind[], method: SignInTag, usedPasskey?: string, authTime?: number): Promise<PendingLogin> {
    const data: Record<string, unknown> = { method };
    if (usedPasskey !== undefined) data.usedPasskey = usedPasskey;
    if (authTime !== undefined) data.authTime = authTime;
    const pendingToken = await this.newAttempt(c, recordId, purpose, MFA_ATTEMPT_TTL_MS, JSON.stringify(data));
    return { status, pendingToken, expiresIn: MFA_ATTEMPT_TTL_MS / 1000, factors, recoveryCodes: (await this.repo.mfa.recoveryCodes(c.id, recordId)).length };
  }

  private async newAttempt(c: Collection, recordId: string, purpose: MfaAttemptRow['purpose'], ttlMs: number, data = ''): Promise<string> {
    const id = newId();
    const verifier = randomToken(32);
    const now = Date.now();
    await this.write(this.repo.mfa.addAttemptSteps({ id, hash: sha256(verifier).toString('hex'), collectionId: c.id, recordId, purpose, tries: 0, data, expires: now + ttlMs }, nowDate(), now));
    return `${id}.${verifier}`;
  }

  /** The live attempt a token names, of one of `purposes`; 401 otherwise. */
  private async attempt(c: Collection, token: unknown, purposes: readonly MfaAttemptRow['purpose'][]): Promise<MfaAttemptRow> {
    if (typeof token !== 'string' || token === '') throw ApiError.validation({ pendingToken: { code: 'validation_required', message: 'Missing required value.' } });
    const dot = token.indexOf('.');
    const row = token.length <= 200 && dot > 0 ? await this.repo.mfa.attempt(token.slice(0, dot), c.id) : undefined;
    const stored = Buffer.from(row ? row.hash : '0'.repeat(64), 'hex');
    const equal = timingSafeEqual(sha256(dot > 0 ? token.slice(dot + 1) : token), stored.length === 32 ? stored : Buffer.alloc(32));
    if (!row || !equal || row.expires <= Date.now() || !purposes.includes(row.purpose)) throw BAD_TOKEN();
    return row;
  }

  /**
   * Counts the proof about to be checked against the attempt and the account, in one write that
   * completes before the proof is looked at: 401 when the attempt used up its tries (or expired),
   * 429 when the account used up its proofs for the window. Proofs sent in parallel are counted
   * one after another by that write, so at most the limits are ever checked.
   */
  private async reserveProof(c: Collection, a: MfaAttemptRow): Promise<void> {
    const tooMany = ApiError.tooManyRequests();
    await this.write(this.repo.mfa.reserveTrySteps(a.id, MFA_ATTEMPT_TRIES, c.id, a.recordId, Date.now(), MFA_ACCOUNT_WINDOW_MS, MFA_ACCOUNT_LIMIT, {
      attempt: { status: 401, code: 'unauthorized', message: BAD_TOKEN().message },
      account: { status: tooMany.status, code: tooMany.code, message: tooMany.message },
    }));
  }

  /** A reserved proof failed: drops the attempt when that was its last try, then throws 401. */
  private async refuse(a: MfaAttemptRow): Promise<never> {
    await this.write([this.repo.mfa.dropSpentAttemptStep(a.id, MFA_ATTEMPT_TRIES)]);
    throw BAD_PROOF();
  }

  private async record(c: Collection, id: string): Promise<Record<string, unknown>> {
    const rec = await this.loadRecord(c, id);
    if (!rec) throw BAD_TOKEN();
    return rec;
  }

  /**
   * Runs a ceremony action (POST …/auth/two-factor/<action>); `caller` is the signed-in record of
   * this collection, if any (the `enroll` action needs it), `callerAuthTime` its session's sign-in
   * time (epoch seconds). 404 for an unknown action or when the policy is `disabled`.
   */
  async action(action: string, c: Collection, body: unknown, caller: Record<string, unknown> | null, callerAuthTime?: number): Promise<CeremonyOutcome> {
    if (c.type !== 'auth' || twoFactorPolicy(c) === 'disabled') throw ApiError.notFound();
    const b = isObject(body) ? body : {};
    switch (action) {
      case 'enroll': return this.enroll(c, caller, callerAuthTime);
      case 'enroll-begin': return this.enrollBegin(c, b);
      case 'enroll-complete': return this.enrollComplete(c, b);
      case 'initiate': return this.initiate(c, b);
      case 'complete': return this.complete(c, b);
      case 'replace-recovery': return this.replaceRecovery(c, b);
      case 'remove': return this.remove(c, b);
      default: throw ApiError.notFound();
    }
  }

  /** A signed-in record without factors starts a first enrollment. */
  private async enroll(c: Collection, caller: Record<string, unknown> | null, callerAuthTime?: number): Promise<CeremonyOutcome> {
    if (!caller) throw ApiError.unauthorized();
    const id = String(caller.id);
    if ((await this.factorsOf(c, id)).length) throw ApiError.conflict('A second factor is enrolled already; add another with a management token (enroll-begin with the managementToken as pendingToken).');
    return { kind: 'json', body: await this.pending(c, id, 'enroll', 'enrollment_required', this.available(c), 'refresh', undefined, callerAuthTime) };
  }

  private factorOf(b: Record<string, unknown>, allowed: readonly string[]): string {
    if (typeof b.factor !== 'string' || !allowed.includes(b.factor)) throw ApiError.validation({ factor: { code: 'validation_value', message: `Must be one of ${allowed.join(', ')}.` } });
    return b.factor;
  }

  private async enrollBegin(c: Collection, b: Record<string, unknown>): Promise<CeremonyOutcome> {
    const a = await this.attempt(c, b.pendingToken, ['enroll', 'manage']);
    const factor = this.factorOf(b, this.available(c));
    const rec = await this.record(c, a.recordId);
    if (factor === 'webauthn') {
      return { kind: 'json', body: await this.webauthn.registrationOptions(c, rec, 'mfa_webauthn_enroll', await this.repo.passkeys.list(c.id, a.recordId)) };
    }
    const { generateSecret, generateURI } = await otplib();
    const secret = generateSecret();
    const ceremonyId = newId();
    await this.write([this.repo.mfa.setAttemptDataStep(a.id, JSON.stringify({ ...parseJson(a.data), ceremonyId, secret: encryptStored(c.id, PENDING_FIELD, a.id, secret) }))]);
    const label = String(rec.email || rec.id);
    return { kind: 'json', body: { ceremonyId, secret, algorithm: 'SHA1', digits: 6, period: 30, uri: generateURI({ issuer: 'svc', label, secret, algorithm: 'sha1', digits: 6, period: 30 }) } };
  }

  private async enrollComplete(c: Collection, b: Record<string, unknown>): Promise<CeremonyOutcome> {
    const a = await this.attempt(c, b.pendingToken, ['enroll', 'manage']);
    const factor = this.factorOf(b, this.available(c));
    const first = (await this.factorsOf(c, a.recordId)).length === 0;
    const steps: WriteStep[] = [];
    if (factor === 'totp') {
      const data = parseJson(a.data);
      if (typeof b.ceremonyId !== 'string' || !data || data.ceremonyId !== b.ceremonyId) throw ApiError.validation({ ceremonyId: { code: 'validation_value', message: 'Start with enroll-begin; the ceremony is unknown or replaced.' } });
      await this.reserveProof(c, a);
      const secret = String(decryptStored(c.id, PENDING_FIELD, a.id, data.secret) ?? '');
      const step = totpStep(await otplib(), secret, b.code);
      if (step === null) return this.refuse(a);
      const id = newId();
      steps.push(this.repo.mfa.addTotpStep(id, c.id, a.recordId, encryptStored(c.id, TOTP_FIELD, id, secret), step, nowDate()));
    } else {
      for (const k of ['clientDataJSON', 'attestationObject']) {
        if (typeof b[k] !== 'string' || b[k] === '') throw ApiError.validation({ [k]: { code: 'validation_required', message: 'Missing required value.' } });
      }
      await this.reserveProof(c, a);
      let cred;
      try {
        cred = await this.webauthn.verifyRegistration(c, a.recordId, 'mfa_webauthn_enroll', {
          ceremonyId: b.ceremonyId, id: typeof b.credentialId === 'string' && b.credentialId ? b.credentialId : undefined,
          clientDataJSON: b.clientDataJSON as string, attestationObject: b.attestationObject as string, transports: b.transports,
        });
      } catch (err) {
        // a failed guard of the passkey's write is a GuardFailed: judged as the API answers it
        const api = knownApiError(err);
        if (api && api.status === 400 && !('ceremonyId' in (api.data ?? {}))) return this.refuse(a);
        throw err;
      }
      steps.push(this.webauthn.storeStep(c, cred, true));
    }
    let codes: string[] | undefined;
    if (first) {
      codes = newRecoveryCodes();
      steps.push(...this.recoverySteps(c, a.recordId, codes));
    }
    // a factor change: every session and pending attempt of the record ends (the proof was counted by reserveProof)
    steps.push(...this.invalidateSteps(c, a.recordId));
    await this.write(steps).catch((err) => {
      if (this.repo.dialect.writeFailure(err)?.constraint) throw ApiError.conflict('This passkey is registered already.');
      throw err;
    });
    return this.success(c, a, codes);
  }

  private async initiate(c: Collection, b: Record<string, unknown>): Promise<CeremonyOutcome> {
    const a = await this.attempt(c, b.pendingToken, ['login']);
    this.factorOf(b, ['webauthn']);
    const used = parseJson(a.data)?.usedPasskey;
    const keys = (await this.repo.passkeys.list(c.id, a.recordId)).filter((k) => k.id !== used);
    if (!keys.length) throw ApiError.validation({ factor: { code: 'validation_value', message: used ? 'The account has no other passkey than the one that signed in.' : 'The account has no passkey.' } });
    return { kind: 'json', body: await this.webauthn.assertionOptions(c, 'mfa_webauthn_login', a.recordId, keys) };
  }

  private async complete(c: Collection, b: Record<string, unknown>): Promise<CeremonyOutcome> {
    const a = await this.attempt(c, b.pendingToken, ['login']);
    const factor = this.factorOf(b, ['totp', 'webauthn', 'recovery']);
    await this.reserveProof(c, a);
    const steps: WriteStep[] = [];
    const spent = { status: 401, code: 'unauthorized', message: 'The second-factor proof is invalid.' };
    if (factor === 'totp') {
      let hit: { id: string; step: number } | null = null;
      const otp = await otplib();
      for (const f of await this.repo.mfa.totpFactors(c.id, a.recordId)) {
        const step = totpStep(otp, String(decryptStored(c.id, TOTP_FIELD, f.id, f.secret) ?? ''), b.code);
        if (step !== null && step > f.lastStep) hit = { id: f.id, step };
      }
      if (!hit) return this.refuse(a);
      steps.push(this.repo.mfa.useTotpStep(hit.id, hit.step, spent));
    } else if (factor === 'recovery') {
      const code = normalizeRecoveryCode(b.code);
      const mac = createHmac('sha256', this.secret).update(`${a.recordId}.${code}`).digest();
      const row = (await this.repo.mfa.recoveryCodes(c.id, a.recordId)).find((r) => {
        const h = Buffer.from(r.hash, 'hex');
        return h.length === 32 && timingSafeEqual(h, mac);
      });
      if (!code || !row) return this.refuse(a);
      steps.push(this.repo.mfa.useRecoveryStep(row.id, spent));
    } else {
      try {
        // the passkey that made the primary sign-in cannot also be its second factor
        const used = parseJson(a.data)?.usedPasskey;
        await this.webauthn.verifyAssertion(c, 'mfa_webauthn_login', b, (key: PasskeyRow) => key.recordId === a.recordId && key.id !== used);
      } catch (err) {
        // a failed guard of the passkey's write is a GuardFailed: judged as the API answers it
        const api = knownApiError(err);
        if (api && api.status === 400 && !('ceremonyId' in (api.data ?? {}))) return this.refuse(a);
        throw err;
      }
    }
    steps.push(this.repo.mfa.consumeAttemptStep(a.id, { status: 401, code: 'unauthorized', message: 'The pending token is invalid, expired or used up; sign in again.' }));
    await this.write(steps);
    return this.success(c, a);
  }

  private async replaceRecovery(c: Collection, b: Record<string, unknown>): Promise<CeremonyOutcome> {
    const a = await this.attempt(c, b.pendingToken, ['manage']);
    if (!(await this.factorsOf(c, a.recordId)).length) throw ApiError.validation({ pendingToken: { code: 'validation_value', message: 'The account has no second factor to recover.' } });
    const codes = newRecoveryCodes();
    await this.write([this.consumeManage(a), ...this.recoverySteps(c, a.recordId, codes)]);
    return { kind: 'json', body: { recoveryCodes: codes } };
  }

  private async remove(c: Collection, b: Record<string, unknown>): Promise<CeremonyOutcome> {
    const a = await this.attempt(c, b.pendingToken, ['manage']);
    const factor = this.factorOf(b, ['totp', 'webauthn']);
    const totp = await this.repo.mfa.totpFactors(c.id, a.recordId);
    const keys = await this.repo.passkeys.list(c.id, a.recordId);
    const credentialId = typeof b.credentialId === 'string' && b.credentialId ? b.credentialId : null;
    const removing = factor === 'totp' ? totp.length : credentialId ? keys.filter((k) => k.id === credentialId).length : keys.filter((k) => k.factor).length;
    if (!removing) throw ApiError.notFound();
    const left = totp.length + keys.length - removing;
    if (left === 0 && twoFactorPolicy(c) === 'required') {
      throw ApiError.validation({ factor: { code: 'validation_value', message: 'This is the last second factor and the collection requires one: enroll another first.' } });
    }
    const steps: WriteStep[] = [this.consumeManage(a)];
    steps.push(factor === 'totp' ? this.repo.mfa.removeTotpStep(c.id, a.recordId) : this.repo.passkeys.removeStep(c.id, a.recordId, credentialId, { status: 404, code: 'not_found', message: 'The requested resource was not found.' }));
    if (left === 0) steps.push(...this.repo.mfa.replaceRecoveryStep(c.id, a.recordId, [], nowDate()));
    steps.push(...this.invalidateSteps(c, a.recordId));
    await this.write(steps);
    return { kind: 'none' };
  }

  private consumeManage(a: MfaAttemptRow): WriteStep {
    return this.repo.mfa.consumeAttemptStep(a.id, { status: 401, code: 'unauthorized', message: 'The management token is invalid, expired or used.' });
  }

  /** Steps ending every session and pending attempt of the record (a factor changed). */
  private invalidateSteps(c: Collection, recordId: string): WriteStep[] {
    return [
      this.repo.auth.bumpEpochStep(c, recordId),
      ...this.repo.sessions.wipeSteps(c.id, recordId, null),
      this.repo.mfa.dropAttemptsStep(c.id, recordId, ['login', 'enroll', 'manage']),
    ];
  }

  private recoverySteps(c: Collection, recordId: string, codes: string[]): WriteStep[] {
    const rows = codes.map((code) => ({ id: newId(), hash: createHmac('sha256', this.secret).update(`${recordId}.${code}`).digest('hex') }));
    return this.repo.mfa.replaceRecoveryStep(c.id, recordId, rows, nowDate());
  }

  /** The record signs in with both factors: its management token (and first recovery codes). */
  private async success(c: Collection, a: MfaAttemptRow, recoveryCodes?: string[]): Promise<CeremonyOutcome> {
    const data = parseJson(a.data);
    // a management token (adding a factor while signed in) renews the session: tag `refresh`
    const method: SignInTag = typeof data?.method === 'string' ? (data.method as SignInTag) : 'refresh';
    // a completed sign-in is a sign-in now; a renewal keeps the sign-in time it came with
    const authTime = method !== 'refresh' ? Math.floor(Date.now() / 1000) : typeof data?.authTime === 'number' ? data.authTime : undefined;
    const managementToken = await this.newAttempt(c, a.recordId, 'manage', MFA_MANAGE_TTL_MS, authTime === undefined ? '' : JSON.stringify({ authTime }));
    return { kind: 'session', record: await this.record(c, a.recordId), managementToken, recoveryCodes, method, authTime };
  }

  private write(steps: WriteStep[]): Promise<unknown> {
    for (const s of steps) s.params = s.params.map(bindValue);
    return this.repo.write(steps);
  }
}

/** The accepted time step of a six-digit TOTP code (one adjacent step each way), or null. */
function totpStep(otp: Otplib, secret: string, code: unknown): number | null {
  const token = typeof code === 'number' ? String(code).padStart(6, '0') : code;
  if (!secret || typeof token !== 'string' || !/^\d{6}$/.test(token)) return null;
  try {
    const r = otp.verifySync({ secret, token, epochTolerance: 30 });
    return r.valid ? (r as { timeStep: number }).timeStep : null;
  } catch {
    return null;
  }
}

const RECOVERY_ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789';

/** Ten fresh recovery codes, `xxxxx-xxxxx` from an unambiguous alphabet (about 49 bits each). */
function newRecoveryCodes(): string[] {
  return Array.from({ length: RECOVERY_CODE_COUNT }, () => {
    let chars = '';
    for (let i = 0; i < 10; i++) chars += RECOVERY_ALPHABET[randomInt(RECOVERY_ALPHABET.length)];
    return `${chars.slice(0, 5)}-${chars.slice(5)}`;
  });
}

function normalizeRecoveryCode(v: unknown): string {
  if (typeof v !== 'string' || v.length > 40) return '';
  const s = v.toLowerCase().replace(/[^a-z0-9]/g, '');
  return s.length === 10 ? `${s.slice(0, 5)}-${s.slice(5)}` : '';
}

function parseJson(s: string): Record<string, unknown> | null {
  try {
    const v = JSON.parse(s);
    return isObject(v) ? v : null;
  } catch {
    return null;
  }
}
