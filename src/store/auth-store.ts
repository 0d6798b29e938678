/**
 * The storage boundary of authentication (ARCHITECTURE.md, "Folders"): what the auth domain
 * (src/auth/) reads from and writes to the database, as named operations. The implementations,
 * shared by both backends (a dialect table each for what they spell differently), live in
 * src/store/shared/auth-sql.ts, session-sql.ts and token-sql.ts; a Store hands them out as
 * `store.sql.auth`, `store.sql.sessions` and `store.sql.authTokens`.
 *
 * Reads return promises of raw values (never rejecting for a missing row: undefined or empty);
 * writes are returned as write-job steps (src/store/write-job.ts) that the caller runs, alone or inside a larger job, through the store's writer. Parameters are passed as the
 * values to store (strings, numbers); callers may still pass the steps through `bindValue`.
 */
import type { Collection } from '../model/schema.js';
import type { WriteStep } from './write-job.js';

/** A step's failure answer (see WriteStep.fail). */
export type StepFail = NonNullable<WriteStep['fail']>;

/**
 * The system tables that hold rows keyed by (`collectionId`, `recordId`) of an auth record:
 * OAuth2 links, passkeys, second factors and their attempts, table-store sessions and tokens. Deleting an auth
 * record or an auth collection deletes its rows in each (the one list both deletes use).
 */
export const AUTH_SIDE_TABLES = ['_externalAuths', '_passkeys', '_totpFactors', '_recoveryCodes', '_mfaAttempts', '_mfaTries', '_sessions', '_authTokens'] as const;

/** Auth records: the hidden columns, look-ups by identity and the auth-only updates. */
export interface AuthRecordStore {
  /**
   * The whole auth record `id` of `c` as one raw row: the record codec's columns (`columns`, the
   * codec's select list over alias `r`) followed by `passwordHash`, `tokenKey` and `token_epoch`;
   * undefined when absent. The statement text is built once per collection `version` (the
   * registry's) and cached, so the per-request caller resolution costs one map look-up and one
   * point read.
   */
  recordRow(c: Collection, version: number, columns: string, id: string): Promise<unknown[] | undefined>;
  /**
   * The id of the first record of `c` whose identity field equals `identity` (`email` compared
   * case-insensitively, other fields exactly; `fields` are the collection's identityFields), or
   * undefined.
   */
  idByIdentity(c: Collection, fields: readonly string[], identity: string): Promise<string | undefined>;
  /** `{id, email, verified}` of the record of `c` with that email (case-insensitive), or undefined. */
  byEmail(c: Collection, email: string): Promise<{ id: string; email: string; verified: boolean } | undefined>;
  /**
   * Step setting `verified` = true and `updated` = `now` on record `recordId` while its email is
   * still `email` (case-insensitive); fails the job with `fail` when no row changed.
   */
  markVerifiedStep(c: Collection, recordId: string, email: string, now: string, fail: StepFail): WriteStep;
  /**
   * Step setting a new password hash and token key (and `updated` = `now`) on record `recordId`
   * while its email is still `email`; fails the job with `fail` when no row changed.
   */
  setPasswordStep(c: Collection, recordId: string, email: string, hash: string, tokenKey: string, now: string, fail: StepFail): WriteStep;
  /** Step adding 1 to the record's `token_epoch` (ends every epoch-checked token). */
  bumpEpochStep(c: Collection, recordId: string): WriteStep;
  /** Steps deleting a record's rows in every {@link AUTH_SIDE_TABLES} table (with the record's own delete). */
  recordSideRowsDeleteSteps(collectionId: string, recordId: string): WriteStep[];
  /** Steps deleting a collection's rows in every {@link AUTH_SIDE_TABLES} table (with the collection's drop). */
  collectionSideRowsDeleteSteps(collectionId: string): WriteStep[];
  /** How many superusers exist (startup hint). */
  superuserCount(): Promise<number>;
}

/** A `_sessions` row (table session store), timestamps as stored (`YYYY-MM-DD HH:MM:SS.sssZ`). */
export interface SessionRow {
  id: string;
  created: string;
  last_seen: string;
  user_agent: string;
  ip: string;
}

/**
 * Session rows of the table session store (docs/auth.md, "Sessions, verification, password reset,
 * rate limits").
 */
export interface SessionRowStore {
  /**
   * Steps for a new login: delete the owner's rows last seen before `cutoff` (their tokens all
   * expired), then insert `row` (its `created` and `last_seen` both `row.created`).
   */
  createSteps(collectionId: string, recordId: string, cutoff: string, row: Omit<SessionRow, 'last_seen'>): WriteStep[];
  /** `last_seen` of session `sid` if it exists and belongs to the record, else undefined (one point read). */
  lastSeen(collectionId: string, recordId: string, sid: string): Promise<string | undefined>;
  /** Step setting the session's `last_seen` to `now`. */
  touchStep(sid: string, now: string): WriteStep;
  /** The owner's sessions last seen at or after `cutoff`, newest first. */
  list(collectionId: string, recordId: string, cutoff: string): Promise<SessionRow[]>;
  /** Step deleting one of the owner's sessions; fails the job with `fail` when none was deleted. */
  revokeStep(collectionId: string, recordId: string, sid: string, fail: StepFail): WriteStep;
  /** Steps deleting the record's sessions, all of them or all but `keepSid`. */
  wipeSteps(collectionId: string, recordId: string, keepSid: string | null): WriteStep[];
}

/** A stored single-use token (`_authTokens`); `expires` in epoch milliseconds. */
export interface AuthTokenRow {
  /** the selector (the row id) */
  id: string;
  /** hex SHA-256 of the verifier */
  hash: string;
  kind: string;
  collectionId: string;
  recordId: string;
  email: string;
  created: string;
  expires: number;
}

/** Verification and password-reset tokens (docs/api.md, "Verification and password reset"). */
export interface AuthTokenRowStore {
  /** Steps deleting every token expired at `nowMs` (epoch ms), then inserting `row`. */
  issueSteps(row: AuthTokenRow, nowMs: number): WriteStep[];
  /** `{hash, recordId, email, expires}` of token `selector` of that kind and collection, or undefined. */
  find(selector: string, kind: string, collectionId: string): Promise<Pick<AuthTokenRow, 'hash' | 'recordId' | 'email' | 'expires'> | undefined>;
  /** Step deleting token `selector`; fails the job with `fail` when it is gone (used meanwhile). */
  consumeStep(selector: string, fail: StepFail): WriteStep;
  /** Steps deleting every token of `kind` for the record. */
  dropAllSteps(kind: string, collectionId: string, recordId: string): WriteStep[];
  /** The newest token of `kind` for the record (one-time codes are looked up by record), or undefined. */
  latest(kind: string, collectionId: string, recordId: string): Promise<Pick<AuthTokenRow, 'id' | 'hash' | 'email' | 'expires'> | undefined>;
}

/** OAuth2 provider links (`_externalAuths`; docs/auth.md, "OAuth2 and passkeys"). */
export interface ExternalAuthRowStore {
  /** The record of `collectionId` linked to the provider account, or undefined. */
  recordFor(collectionId: string, provider: string, providerId: string): Promise<string | undefined>;
  /** The links of these records (oldest first per record). */
  list(collectionId: string, recordIds: readonly string[]): Promise<{ recordId: string; provider: string; providerId: string }[]>;
  /**
   * Step inserting a link; a provider account linked already fails the job with a constraint error.
   * `confirmed`: the link was made under an email address someone proved (the provider vouched
   * for it, or the record's owner was signed in to a verified record); an unconfirmed link is
   * dropped when the address is verified or the password reset ({@link unconfirmedDropStep}).
   */
  linkStep(id: string, collectionId: string, recordId: string, provider: string, providerId: string, created: string, confirmed: boolean): WriteStep;
  /**
   * Step deleting the record's unconfirmed links (made under an address nobody had proven, or
   * carried over from a database older than the `confirmed` column): run when the address is
   * verified and when a password reset completes (docs/api.md, "Verification and password reset").
   */
  unconfirmedDropStep(collectionId: string, recordId: string): WriteStep;
  /** Step deleting the record's link to `provider`; fails the job with `fail` when there is none. */
  unlinkStep(collectionId: string, recordId: string, provider: string, fail: StepFail): WriteStep;
}

/** A stored WebAuthn credential; byte strings as unpadded base64url, `transports` a JSON array. */
export interface PasskeyRow {
  /** the credential id */
  id: string;
  recordId: string;
  /** the COSE public key */
  publicKey: string;
  /** the authenticator's signature counter at the last accepted use */
  counter: number;
  transports: string;
  /** enrolled as a second factor (two-factor enroll) rather than registered as a sign-in passkey */
  factor: boolean;
}

/**
 * A sign-in passkey as its owner sees it (GET …/records/:id/passkeys): never the public key or
 * counter. Timestamps as stored (`YYYY-MM-DD HH:MM:SS.sssZ`); `lastUsed` '' when never used.
 */
export interface PasskeyView {
  /** the credential id (base64url) */
  id: string;
  created: string;
  lastUsed: string;
}

/** WebAuthn credentials (`_passkeys`; docs/auth.md, "OAuth2 and passkeys"). */
export interface PasskeyRowStore {
  /** The record's sign-in passkeys (not second factors), oldest first. */
  signInKeys(collectionId: string, recordId: string): Promise<PasskeyView[]>;
  /** Step deleting one of the record's sign-in passkeys (not a second factor); fails with `fail` when there is none. */
  removeSignInStep(collectionId: string, recordId: string, id: string, fail: StepFail): WriteStep;
  /** The credential `credentialId` of the collection, or undefined. */
  find(collectionId: string, credentialId: string): Promise<PasskeyRow | undefined>;
  /** A record's credentials, oldest first; only second factors (or only sign-in passkeys) with `factor`. */
  list(collectionId: string, recordId: string, factor?: boolean): Promise<PasskeyRow[]>;
  /** Step deleting one of the record's credentials (or all its second-factor ones without `id`). */
  removeStep(collectionId: string, recordId: string, id: string | null, fail: StepFail): WriteStep;
  /**
   * Step deleting every sign-in passkey of the record (`factor` = 0; second factors stay): a
   * completed password reset ends them (docs/api.md, "Verification and password reset").
   */
  removeAllSignInStep(collectionId: string, recordId: string): WriteStep;
  /** Step storing a new credential; a taken id fails the job with a constraint error. */
  addStep(collectionId: string, row: PasskeyRow, created: string): WriteStep;
  /**
   * Step recording a use: counter `oldCounter` → `newCounter`, `lastUsed` = `now`; fails the job
   * with `fail` when the counter moved meanwhile (a concurrent use of a cloned authenticator).
   */
  useStep(collectionId: string, credentialId: string, oldCounter: number, newCounter: number, now: string, fail: StepFail): WriteStep;
}

/** A pending two-factor attempt, enrollment or management capability (`_mfaAttempts`). */
export interface MfaAttemptRow {
  /** the token's selector */
  id: string;
  /** hex SHA-256 of the token's verifier */
  hash: string;
  collectionId: string;
  recordId: string;
  /** `login` (factor_required), `enroll` (enrollment_required or `enroll`), `manage` (management capability) */
  purpose: 'login' | 'enroll' | 'manage';
  /** failed proofs so far */
  tries: number;
  /** ceremony state (a TOTP enrollment's encrypted secret), JSON or '' */
  data: string;
  /** epoch ms */
  expires: number;
}

/** Second factors (docs/auth.md, "Two-factor sign-in"; docs/api.md, "Two-factor"). */
export interface MfaRowStore {
  /** The record's TOTP factors (secrets as stored: encrypted). */
  totpFactors(collectionId: string, recordId: string): Promise<{ id: string; secret: string; lastStep: number }[]>;
  addTotpStep(id: string, collectionId: string, recordId: string, secret: string, lastStep: number, created: string): WriteStep;
  /** Step accepting time step `step` of a TOTP factor; fails with `fail` unless it is newer than the last accepted one (reuse). */
  useTotpStep(id: string, step: number, fail: StepFail): WriteStep;
  /** Step deleting the record's TOTP factors. */
  removeTotpStep(collectionId: string, recordId: string): WriteStep;
  /** The record's unused recovery codes (hashed). */
  recoveryCodes(collectionId: string, recordId: string): Promise<{ id: string; hash: string }[]>;
  /** Steps replacing the record's recovery codes with `codes` (none: delete them). */
  replaceRecoveryStep(collectionId: string, recordId: string, codes: { id: string; hash: string }[], created: string): WriteStep[];
  /** Step spending one recovery code; fails with `fail` when it was spent meanwhile. */
  useRecoveryStep(id: string, fail: StepFail): WriteStep;
  /** An attempt by selector in a collection, or undefined. */
  attempt(id: string, collectionId: string): Promise<MfaAttemptRow | undefined>;
  /** Steps dropping expired attempts, then inserting `row`. */
  addAttemptSteps(row: MfaAttemptRow, created: string, nowMs: number): WriteStep[];
  setAttemptDataStep(id: string, data: string): WriteStep;
  /** Steps counting a failed proof, deleting the attempt at `maxTries`. */
  failAttemptSteps(id: string, maxTries: number): WriteStep[];
  /** Step consuming an attempt; fails with `fail` when it is gone. */
  consumeAttemptStep(id: string, fail: StepFail): WriteStep;
  /** Step deleting the record's attempts of these purposes. */
  dropAttemptsStep(collectionId: string, recordId: string, purposes: readonly string[]): WriteStep;
  /** Proofs submitted for the account after `sinceMs` (the durable account limit). */
  triesSince(collectionId: string, recordId: string, sinceMs: number): Promise<number>;
  /**
   * Steps reserving one proof before it is checked, in one job: the attempt's `tries` go up by one
   * unless it has `maxTries` already or expired at `nowMs` (the job then fails with
   * `fail.attempt`), and one proof is recorded for the account at `nowMs` unless it has `limit`
   * in the last `windowMs` (the job fails with `fail.account`, the attempt's count rolled back
   * with it). Parallel proofs are counted one after another, so no more than the limits are
   * ever checked (docs/api.md, "Two-factor": limits).
   */
  reserveTrySteps(attemptId: string, maxTries: number, collectionId: string, recordId: string, nowMs: number, windowMs: number, limit: number, fail: { attempt: StepFail; account: StepFail }): WriteStep[];
  /** Step deleting an attempt whose reserved tries reached `maxTries` (after its last proof failed). */
  dropSpentAttemptStep(id: string, maxTries: number): WriteStep;
  /** Steps recording one proof at `nowMs`, dropping the account's entries older than `windowMs`. */
  addTrySteps(collectionId: string, recordId: string, nowMs: number, windowMs: number): WriteStep[];
}

/** What `svc superuser create|upsert` writes (see SuperuserAdminStore). */
export interface SuperuserWrite {
  /** normalized email */
  email: string;
  /** argon2id PHC string */
  passwordHash: string;
  /** a fresh token key (ends every session of an existing superuser) */
  tokenKey: string;
  /** new record id, used only when no superuser has the email */
  newId: string;
  /** `created` / `updated` timestamp */
  now: string;
}

/**
 * The CLI's superuser write, on its own connection to a data directory's database (safe while a
 * server runs on it): creates the system tables if needed, then in one transaction either
 * inserts a superuser or, when one has the email (case-insensitive), sets its password and token
 * key, unless `mode` is `create`. Resolves `exists` (nothing written) for `create` on an existing
 * email; otherwise the stored id and email and whether a row was created.
 */
export type SuperuserAdminStore = (
  dbPath: string,
  w: SuperuserWrite,
  mode: 'create' | 'upsert',
) => { id: string; email: string; created: boolean } | 'exists';
