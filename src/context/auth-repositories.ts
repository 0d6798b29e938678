/**
 * The narrow repositories of the auth services (src/auth/, src/auth/methods/): each names the
 * statement stores and capabilities one class really uses, instead of the whole `Store` (the
 * service locator of ./store.ts; ARCHITECTURE.md, "Folders"), so a class's dependencies show in
 * its constructor type and a test can hand it a small fake. The statement stores are those of
 * `StoreSql` (src/store/store.ts, src/store/auth-store.ts), narrowed with `Pick` to the members
 * used; `write` is the writer's (SqlWriter of src/store/backend.ts). One builder per repository,
 * each over the open database's Store, and `authRepositories`, every one AuthService hands out,
 * built by the composition root (src/boot/services.ts).
 */
import type { Store } from './store.js';
import type { WriteStep, StepResult } from '../store/write-job.js';
import type { AuthTokenRowStore, SessionRowStore, AuthRecordStore, ExternalAuthRowStore, PasskeyRowStore, MfaRowStore } from '../store/auth-store.js';
import type { CollectionRegistry } from '../collections/collection-registry.js';
import type { ChangeFeed } from '../store/change-feed.js';
import type { Dialect } from '../store/dialect.js';
import type { SqlWriter } from '../store/backend.js';
import type { RateCounter } from '../store/store.js';
import type { Collection } from '../model/schema.js';
import type { RecordCodec } from '../records/record-codec.js';
import type { AuthRecordCache } from '../cache/record-cache.js';

/** Runs write jobs (SqlWriter.write of src/store/backend.ts). */
export interface StepWriter {
  /**
   * Runs `steps` as one write job, in one transaction; resolves each step's result in order.
   * @throws GuardFailed (src/store/errors/) when a step's guard did not hold; the backend's write error otherwise
   */
  write(steps: WriteStep[]): Promise<StepResult[]>;
}

/** What AuthTokens (src/auth/auth-tokens.ts) needs: the `_authTokens` statements and the writer. */
export interface AuthTokenRepository extends StepWriter {
  authTokens: AuthTokenRowStore;
}

/**
 * What SessionStore (src/auth/sessions.ts) needs: the `_sessions` statements, the epoch bump of
 * an auth record (sign out everywhere), the writer and its change feed (ended sessions).
 */
export interface SessionRepository extends StepWriter {
  sessions: SessionRowStore;
  auth: Pick<AuthRecordStore, 'bumpEpochStep'>;
  /** the committed changes (SqlWriter.changes), where ended sessions are announced */
  changes: Pick<ChangeFeed, 'subscribe'>;
}

/**
 * What AccountEmails (src/auth/account-emails.ts) needs: the collection an id names (a queued
 * mail finds its collection again), the auth record's address look-up and its verification,
 * password and epoch steps, and the side rows a reset or an address change drops (session rows,
 * sign-in passkeys, unconfirmed provider links).
 */
export interface AccountEmailRepository extends StepWriter {
  registry: Pick<CollectionRegistry, 'byId'>;
  auth: Pick<AuthRecordStore, 'byEmail' | 'markVerifiedStep' | 'setPasswordStep' | 'bumpEpochStep'>;
  sessions: Pick<SessionRowStore, 'wipeSteps'>;
  passkeys: Pick<PasskeyRowStore, 'removeAllSignInStep'>;
  externalAuths: Pick<ExternalAuthRowStore, 'unconfirmedDropStep'>;
}

/** What PasswordMethod (src/auth/methods/password.ts) needs: the record an identity names. */
export interface IdentityRepository {
  auth: Pick<AuthRecordStore, 'idByIdentity'>;
}

/**
 * What the mailed sign-in methods share (EmailedMethod, src/auth/methods/emailed.ts; the magic
 * link needs nothing more): the collection an id names (a queued mail finds its collection
 * again), the record an identity names, and the writer.
 */
export interface EmailedMethodRepository extends IdentityRepository, StepWriter {
  registry: Pick<CollectionRegistry, 'byId'>;
}

/** What OtpMethod (src/auth/methods/otp.ts) needs besides the mailed methods' share: its `_authTokens` rows. */
export interface OtpRepository extends EmailedMethodRepository {
  authTokens: Pick<AuthTokenRowStore, 'issueSteps' | 'dropAllSteps' | 'latest' | 'consumeStep'>;
}

/** Tells a unique-key clash of a failed write (a provider account or passkey linked twice). */
export interface WriteFailures {
  dialect: Pick<Dialect, 'writeFailure'>;
}

/**
 * What OAuth2Method (src/auth/methods/oauth2.ts) needs: its `_externalAuths` statements, the
 * address look-up of an auth record (a first sign-in with a taken address), the writer and its
 * failures.
 */
export interface OAuth2Repository extends StepWriter, WriteFailures {
  externalAuths: Pick<ExternalAuthRowStore, 'recordFor' | 'linkStep' | 'unlinkStep'>;
  auth: Pick<AuthRecordStore, 'byEmail'>;
}

/**
 * What WebAuthnMethod (src/auth/methods/webauthn.ts) needs: its `_passkeys` statements, the
 * record an identity names, the writer and its failures.
 */
export interface WebAuthnRepository extends StepWriter, WriteFailures, IdentityRepository {
  passkeys: Pick<PasskeyRowStore, 'list' | 'addStep' | 'find' | 'useStep' | 'signInKeys' | 'removeSignInStep'>;
}

/**
 * What TwoFactor (src/auth/two-factor.ts) needs: the second-factor statements (TOTP, recovery
 * codes, attempts), the record's passkeys (listed as factors, removed), what ends every session
 * of a record (epoch bump, session rows), the writer and its failures.
 */
export interface TwoFactorRepository extends StepWriter, WriteFailures {
  mfa: MfaRowStore;
  passkeys: Pick<PasskeyRowStore, 'list' | 'removeStep'>;
  auth: Pick<AuthRecordStore, 'bumpEpochStep'>;
  sessions: Pick<SessionRowStore, 'wipeSteps'>;
}

/**
 * What reads a whole auth record by id (loadAuthRecord of src/auth/auth-service.ts): the
 * collection's version, its record codec and the whole-record statement.
 */
export interface AuthRecordSource {
  registry: Pick<CollectionRegistry, 'version'>;
  /** the record codec of `c`'s current version (Store.codec) */
  codec(c: Collection): RecordCodec;
  auth: Pick<AuthRecordStore, 'recordRow'>;
}

/**
 * What AuthService itself reads: a token's collection by id, the callers' records (an
 * AuthRecordSource), their cache, and the writer's commit count (a record read is cached only when
 * nothing committed during it).
 */
export interface AuthRecordRepository extends AuthRecordSource {
  registry: Pick<CollectionRegistry, 'byId' | 'version'>;
  /** callers' whole auth records (Caches.authRecords of src/cache/caches.ts) */
  authRecords: AuthRecordCache;
  writer: Pick<SqlWriter, 'commits'>;
}

/**
 * Every repository AuthService (src/auth/auth-service.ts) uses or hands to the classes it builds,
 * one per class, and the shared rate counters.
 */
export interface AuthRepositories {
  records: AuthRecordRepository;
  sessions: SessionRepository;
  tokens: AuthTokenRepository;
  emails: AccountEmailRepository;
  password: IdentityRepository;
  magicLink: EmailedMethodRepository;
  otp: OtpRepository;
  oauth2: OAuth2Repository;
  webauthn: WebAuthnRepository;
  twoFactor: TwoFactorRepository;
  /** rate-limit counters shared by every instance (StoreSql.sharedLimiter; PostgreSQL); absent: counted in this process's memory */
  sharedLimiter?: RateCounter;
}

/** The writer of `store` as a StepWriter. */
const writerOf = (store: Store): StepWriter['write'] => (steps) => store.writer.write(steps);

/** The AuthTokenRepository over `store`. */
export function authTokenRepository(store: Store): AuthTokenRepository {
  return { authTokens: store.sql.authTokens, write: writerOf(store) };
}

/** The SessionRepository over `store`. */
export function sessionRepository(store: Store): SessionRepository {
  return { sessions: store.sql.sessions, auth: store.sql.auth, changes: store.writer.changes, write: writerOf(store) };
}

/** The AccountEmailRepository over `store`. */
export function accountEmailRepository(store: Store): AccountEmailRepository {
  const { auth, sessions, passkeys, externalAuths } = store.sql;
  return { registry: store.registry, auth, sessions, passkeys, externalAuths, write: writerOf(store) };
}

/** The IdentityRepository over `store`. */
export function identityRepository(store: Store): IdentityRepository {
  return { auth: store.sql.auth };
}

/** The EmailedMethodRepository over `store` (the magic link's). */
export function emailedMethodRepository(store: Store): EmailedMethodRepository {
  return { registry: store.registry, auth: store.sql.auth, write: writerOf(store) };
}

/** The OtpRepository over `store`. */
export function otpRepository(store: Store): OtpRepository {
  return { ...emailedMethodRepository(store), authTokens: store.sql.authTokens };
}

/** The OAuth2Repository over `store`. */
export function oauth2Repository(store: Store): OAuth2Repository {
  const { externalAuths, auth, dialect } = store.sql;
  return { externalAuths, auth, dialect, write: writerOf(store) };
}

/** The WebAuthnRepository over `store`. */
export function webauthnRepository(store: Store): WebAuthnRepository {
  const { passkeys, auth, dialect } = store.sql;
  return { passkeys, auth, dialect, write: writerOf(store) };
}

/** The TwoFactorRepository over `store`. */
export function twoFactorRepository(store: Store): TwoFactorRepository {
  const { mfa, passkeys, auth, sessions, dialect } = store.sql;
  return { mfa, passkeys, auth, sessions, dialect, write: writerOf(store) };
}

/** The AuthRecordRepository over `store` (also an AuthRecordSource, for loadAuthRecord). */
export function authRecordRepository(store: Store): AuthRecordRepository {
  return { registry: store.registry, codec: (c) => store.codec(c), auth: store.sql.auth, authRecords: store.caches.authRecords, writer: store.writer };
}

/** Every repository of AuthRepositories over `store`. */
export function authRepositories(store: Store): AuthRepositories {
  return {
    records: authRecordRepository(store),
    sessions: sessionRepository(store),
    tokens: authTokenRepository(store),
    emails: accountEmailRepository(store),
    password: identityRepository(store),
    magicLink: emailedMethodRepository(store),
    otp: otpRepository(store),
    oauth2: oauth2Repository(store),
    webauthn: webauthnRepository(store),
    twoFactor: twoFactorRepository(store),
    sharedLimiter: store.sql.sharedLimiter,
  };
}
