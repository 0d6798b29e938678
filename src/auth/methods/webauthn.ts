/**
 * Passkeys (WebAuthn) as a sign-in method (docs/auth.md,
 * "OAuth2 and passkeys": `options.auth.methods.webauthn
 * = {enabled, rpId, rpName, origins}`). Ceremonies are checked by @simplewebauthn/server.
 *
 * A ceremony is a single-use `_authTokens` row (kind `webauthn_register` or `webauthn_login`,
 * five minutes); the `ceremonyId` is its token and the challenge is HMAC-SHA256(server secret,
 * ceremonyId), so the challenge is never stored and cannot be guessed without the secret. Every
 * finish consumes its ceremony before the proof is checked: a failed attempt cannot be retried.
 *
 * - Registration (authenticated, own collection): begin → creation options with a discoverable
 *   (resident) credential required and the record's passkeys excluded; finish verifies the
 *   attestation (origin one of `origins`, RP id `rpId`) and stores the credential.
 * - Sign-in: initiate `{identity?}` → request options with no allow-list (discoverable
 *   credentials; nothing in the answer depends on whether the identity exists); complete verifies
 *   the assertion against the stored public key, requires the signature counter to move forward
 *   when the authenticator keeps one (a cloned authenticator is refused), and records the use. It
 *   reports whether the user was verified (UV): only then does the sign-in count as both factors
 *   where a second one is asked (AuthService.signIn; docs/api.md, "Two-factor").
 */
import { createHmac } from 'node:crypto';
import { ApiError, type FieldError } from '../../errors/api-error.js';
import type { Collection } from '../../model/schema.js';
import type { WebAuthnRepository } from '../../context/auth-repositories.js';
import type { AuthRateLimits } from '../rate-limit.js';
import type { ClientInfo } from '../client.js';
import { isObject, methodEnabled, methodOptions, type AuthMethod, type CallerAccess, type MethodCaller, type MethodOptionsCheck, type MethodResult, type MethodRoute } from './method.js';
import { twoFactorPolicy } from '../two-factor.js';
import type { AuthTokenKind, AuthTokens, FoundToken } from '../auth-tokens.js';
import type { PasskeyRow, PasskeyView } from '../../store/auth-store.js';
import type { WriteStep } from '../../store/write-job.js';
type WebAuthnServer = typeof import('@simplewebauthn/server');
type WebAuthnHelpers = typeof import('@simplewebauthn/server/helpers');
let webauthnLibrary: Promise<[WebAuthnServer, WebAuthnHelpers]> | null = null;

/**
 * @simplewebauthn/server and its helpers, imported on the first passkey ceremony rather than at
 * start: with their ASN.1 and X.509 stack they are many modules and megabytes resident
 * (bench/README.md, "Libraries loaded on first use"), which a server whose users never use passkeys
 * should not carry.
 */
function webauthnLib(): Promise<[WebAuthnServer, WebAuthnHelpers]> {
  webauthnLibrary ??= Promise.all([import('@simplewebauthn/server'), import('@simplewebauthn/server/helpers')]);
  return webauthnLibrary;
}
import { nowDate } from '../../collections/fields/index.js';
const B64URL = /^[A-Za-z0-9_-]+$/;
/** Longest accepted byte string (base64url characters): attestation objects are a few KB. */
const MAX_B64 = 64 * 1024;
/** How long a browser may take (milliseconds), as told to the client. */
const CEREMONY_TIMEOUT_MS = 300_000;

/** The relying party of a collection. */
interface RelyingParty {
  rpId: string;
  rpName: string;
  origins: string[];
}

const fieldError = (field: string, message: string): ApiError => ApiError.validation({ [field]: { code: 'validation_value', message } });
const BAD_CEREMONY = { ceremonyId: { code: 'validation_value', message: 'Invalid, expired or already used ceremony.' } };

/**
 * The errors of `options.auth.methods.webauthn` (keys under `at`): `rpId` a host name, `rpName`
 * a short string, `origins` a non-empty list of origins (https, or http on localhost) whose host
 * is `rpId` or under it. Only checked when the method is enabled or the keys are given.
 */
export function webauthnOptionErrors(m: Record<string, unknown>, at: string): Record<string, FieldError> {
  const errors: Record<string, FieldError> = {};
  if (m.enabled !== true && !('rpId' in m) && !('origins' in m)) return errors;
  const rpId = m.rpId;
  const hostOk = typeof rpId === 'string' && rpId.length <= 253 && /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/.test(rpId);
  if (!hostOk) errors[`${at}.rpId`] = { code: 'validation_value', message: 'Must be the relying party id: a lowercase host name such as "example.com" (no scheme or port).' };
  if ('rpName' in m && (typeof m.rpName !== 'string' || m.rpName === '' || m.rpName.length > 100)) errors[`${at}.rpName`] = { code: 'validation_value', message: 'Must be a string of 1 to 100 characters.' };
  const origins = m.origins;
  const originOk = (o: unknown) => {
    if (typeof o !== 'string') return false;
    try {
      const u = new URL(o);
      if (u.origin !== o) return false;
      const local = u.hostname === 'localhost' || u.hostname.endsWith('.localhost');
      if (u.protocol !== 'https:' && !(u.protocol === 'http:' && local)) return false;
      return !hostOk || u.hostname === rpId || u.hostname.endsWith(`.${String(rpId)}`);
    } catch {
      return false;
    }
  };
  if (!Array.isArray(origins) || origins.length === 0 || !origins.every(originOk)) {
    errors[`${at}.origins`] = { code: 'validation_value', message: 'Must be a non-empty array of origins ("https://app.example.com"; http only on localhost) on the rpId host or under it.' };
  }
  return errors;
}

/** The passkey method's options check (webauthnOptionErrors). */
export const webauthnOptions: MethodOptionsCheck = { slug: 'webauthn', checkOptions: webauthnOptionErrors };

export class WebAuthnMethod implements AuthMethod {
  readonly slug = webauthnOptions.slug;
  readonly checkOptions = webauthnOptions.checkOptions;
  readonly stores = ['_passkeys', '_authTokens'] as const;
  readonly events = ['auth-success'] as const;

  constructor(
    private repo: WebAuthnRepository,
    private limits: AuthRateLimits,
    private tokens: AuthTokens,
    private secret: Buffer,
    private loadRecord: (c: Collection, id: string) => Promise<Record<string, unknown> | null>,
    private access: CallerAccess,
    /** the record's second-factor kinds, a passkey `exceptPasskey` not counted (TwoFactor.factorsOf) */
    private factorsOf: (c: Collection, recordId: string, exceptPasskey: string) => Promise<readonly string[]>,
  ) {}

  enabled(c: Collection): boolean {
    return methodEnabled(c, this.slug);
  }

  private rp(c: Collection): RelyingParty {
    const m = methodOptions(c, this.slug);
    const rpId = String(m.rpId ?? '');
    return { rpId, rpName: typeof m.rpName === 'string' && m.rpName ? m.rpName : rpId, origins: Array.isArray(m.origins) ? (m.origins as string[]) : [] };
  }

  /**
   * Whether `c` names a relying party (`rpId` and at least one origin), enabled or not: passkeys
   * as a second factor need only that (two-factor.ts).
   */
  hasRelyingParty(c: Collection): boolean {
    const w = methodOptions(c, this.slug);
    return typeof w.rpId === 'string' && Array.isArray(w.origins) && w.origins.length > 0;
  }

  /** The challenge of a ceremony: HMAC-SHA256(secret, ceremonyId), base64url. */
  private challenge(ceremonyId: string): string {
    return createHmac('sha256', this.secret).update(`webauthn.${ceremonyId}`).digest('base64url');
  }

  /** Consumes a ceremony of `kind`: 400 when it is malformed, unknown, expired or used. */
  private async consume(kind: AuthTokenKind, c: Collection, ceremonyId: unknown): Promise<FoundToken & { ceremonyId: string }> {
    if (typeof ceremonyId !== 'string' || ceremonyId === '') throw ApiError.validation({ ceremonyId: { code: 'validation_required', message: 'Missing required value.' } });
    const found = await this.tokens.find(kind, c, ceremonyId);
    if (!found) throw ApiError.validation(BAD_CEREMONY);
    await this.repo.write([this.tokens.consumeStep(found, { status: 400, code: 'validation_failed', message: 'Failed to validate the submitted data.', data: BAD_CEREMONY })]);
    return { ...found, ceremonyId };
  }

  /**
   * Registration begin (POST …/auth/webauthn/register/begin) for the signed-in record: creation
   * options with `challenge`, `rpId`, `rpName` and `ceremonyId`.
   */
  async registerBegin(c: Collection, record: Record<string, unknown>): Promise<Record<string, unknown>> {
    return this.registrationOptions(c, record, 'webauthn_register', await this.repo.passkeys.list(c.id, String(record.id)));
  }

  /**
   * Registration finish (POST …/auth/webauthn/register/finish): verifies the attestation and
   * stores the credential on the signed-in record.
   * @throws ApiError 400 on a malformed body, a foreign ceremony or a failed attestation; 409 when the credential is registered already
   */
  async registerFinish(c: Collection, record: Record<string, unknown>, body: unknown): Promise<void> {
    const b = isObject(body) ? body : {};
    const r = isObject(b.response) ? b.response : {};
    const errors: Record<string, FieldError> = {};
    byteString(b, 'id', errors);
    byteString(b, 'rawId', errors);
    byteString(r, 'clientDataJSON', errors, 'response.clientDataJSON');
    byteString(r, 'attestationObject', errors, 'response.attestationObject');
    if (Object.keys(errors).length) throw ApiError.validation(errors);
    if (b.id !== b.rawId) throw fieldError('rawId', 'Must equal id.');
    const cred = await this.verifyRegistration(c, String(record.id), 'webauthn_register', {
      ceremonyId: b.ceremonyId, id: b.id as string, clientDataJSON: r.clientDataJSON as string, attestationObject: r.attestationObject as string, transports: r.transports,
    });
    await this.repo.write([this.storeStep(c, cred, false)]).catch((err) => {
      if (this.repo.dialect.writeFailure(err)?.constraint) throw ApiError.conflict('This passkey is registered already.');
      throw err;
    });
  }

  /**
   * Creation options for `record` under a new ceremony of `kind` (bound to the record), a
   * discoverable credential required and `exclude` listed as registered already.
   */
  async registrationOptions(c: Collection, record: Record<string, unknown>, kind: AuthTokenKind, exclude: PasskeyRow[]): Promise<Record<string, unknown>> {
    const rp = this.rp(c);
    const id = String(record.id);
    const ceremonyId = await this.tokens.issue(kind, c, id, '');
    const challenge = this.challenge(ceremonyId);
    const [{ generateRegistrationOptions }] = await webauthnLib();
    const options = await generateRegistrationOptions({
      rpName: rp.rpName,
      rpID: rp.rpId,
      userName: String(record.email || id),
      userID: new TextEncoder().encode(id),
      challenge: Buffer.from(challenge, 'base64url'),
      timeout: CEREMONY_TIMEOUT_MS,
      attestationType: 'none',
      excludeCredentials: exclude.map((k) => ({ id: k.id, transports: parseTransports(k.transports) })),
      authenticatorSelection: { residentKey: 'required', userVerification: 'preferred' },
    });
    return { ...options, challenge, rpId: rp.rpId, rpName: rp.rpName, ceremonyId };
  }

  /**
   * Consumes a registration ceremony of `kind` for `recordId` and verifies the attestation
   * (origin one of `origins`, RP id, challenge). `id` may be left out: it is then read from the
   * attestation. Answers the credential to store (not stored).
   * @throws ApiError 400 on a bad ceremony or a failed attestation (field `response`)
   */
  async verifyRegistration(c: Collection, recordId: string, kind: AuthTokenKind, input: { ceremonyId: unknown; id?: string; clientDataJSON: string; attestationObject: string; transports?: unknown }): Promise<Omit<PasskeyRow, 'factor'>> {
    const ceremony = await this.consume(kind, c, input.ceremonyId);
    if (ceremony.recordId !== recordId) throw ApiError.validation(BAD_CEREMONY);
    const rp = this.rp(c);
    const transports = Array.isArray(input.transports) ? input.transports.filter((t): t is string => typeof t === 'string' && t.length < 20).slice(0, 8) : [];
    const [{ verifyRegistrationResponse }, helpers] = await webauthnLib();
    try {
      const id = input.id ?? credentialIdOf(helpers, input.attestationObject);
      const out = await verifyRegistrationResponse({
        response: { id, rawId: id, type: 'public-key', response: { clientDataJSON: input.clientDataJSON, attestationObject: input.attestationObject, transports: transports as never }, clientExtensionResults: {} },
        expectedChallenge: this.challenge(ceremony.ceremonyId),
        expectedOrigin: rp.origins,
        expectedRPID: rp.rpId,
        requireUserVerification: false,
      });
      if (!out.verified) throw new Error('not verified');
      const cred = out.registrationInfo.credential;
      return { id: cred.id, recordId, publicKey: Buffer.from(cred.publicKey).toString('base64url'), counter: cred.counter, transports: JSON.stringify(cred.transports ?? transports) };
    } catch (err) {
      throw fieldError('response', `The passkey registration could not be verified: ${(err as Error).message}`);
    }
  }

  /** The write step storing a verified credential (a second factor with `factor`). */
  storeStep(c: Collection, cred: Omit<PasskeyRow, 'factor'>, factor: boolean): WriteStep {
    return this.repo.passkeys.addStep(c.id, { ...cred, factor }, nowDate());
  }

  /**
   * Request options under a new ceremony of `kind`; `bound` ties the ceremony to a record ('' for
   * none), `allow` lists the acceptable credentials (empty: any discoverable one).
   */
  async assertionOptions(c: Collection, kind: AuthTokenKind, bound: string, allow: PasskeyRow[]): Promise<Record<string, unknown>> {
    const rp = this.rp(c);
    const ceremonyId = await this.tokens.issue(kind, c, bound, '');
    const challenge = this.challenge(ceremonyId);
    const [{ generateAuthenticationOptions }] = await webauthnLib();
    const options = await generateAuthenticationOptions({
      rpID: rp.rpId, challenge: Buffer.from(challenge, 'base64url'), timeout: CEREMONY_TIMEOUT_MS, userVerification: 'preferred',
      allowCredentials: allow.map((k) => ({ id: k.id, transports: parseTransports(k.transports) })),
    });
    return { ...options, challenge, rpId: rp.rpId, ceremonyId };
  }

  /**
   * Consumes an assertion ceremony of `kind` and verifies the assertion in `b` against the stored
   * credential it names (which `accept` must allow), the counter moving forward; records the use.
   * Answers the credential and whether the authenticator verified the user (the UV flag of the
   * authenticator data: a PIN or biometric check, not only presence).
   * @throws ApiError 400 (fields `ceremonyId`, `credentialId`, `signature`) when anything fails
   */
  async verifyAssertion(c: Collection, kind: AuthTokenKind, b: Record<string, unknown>, accept: (key: PasskeyRow) => boolean): Promise<{ key: PasskeyRow; userVerified: boolean }> {
    const errors: Record<string, FieldError> = {};
    for (const k of ['credentialId', 'authenticatorData', 'clientDataJSON', 'signature']) byteString(b, k, errors);
    if (b.userHandle !== undefined && b.userHandle !== null && b.userHandle !== '') byteString(b, 'userHandle', errors);
    if (Object.keys(errors).length) throw ApiError.validation(errors);
    const ceremony = await this.consume(kind, c, b.ceremonyId);
    const key = await this.repo.passkeys.find(c.id, b.credentialId as string);
    const refused = () => fieldError('signature', 'The passkey assertion could not be verified.');
    if (!key) throw fieldError('credentialId', 'No such passkey is registered in this collection.');
    if ((ceremony.recordId !== '' && ceremony.recordId !== key.recordId) || !accept(key)) throw refused();
    if (typeof b.userHandle === 'string' && b.userHandle !== '' && Buffer.from(b.userHandle, 'base64url').toString('utf8') !== key.recordId) throw refused();
    const rp = this.rp(c);
    const [{ verifyAuthenticationResponse }] = await webauthnLib();
    let newCounter: number;
    let userVerified: boolean;
    try {
      const out = await verifyAuthenticationResponse({
        response: {
          id: key.id, rawId: key.id, type: 'public-key', clientExtensionResults: {},
          response: { authenticatorData: b.authenticatorData as string, clientDataJSON: b.clientDataJSON as string, signature: b.signature as string, userHandle: typeof b.userHandle === 'string' && b.userHandle ? b.userHandle : undefined },
        },
        expectedChallenge: this.challenge(ceremony.ceremonyId),
        expectedOrigin: rp.origins,
        expectedRPID: rp.rpId,
        credential: { id: key.id, publicKey: Buffer.from(key.publicKey, 'base64url'), counter: key.counter, transports: parseTransports(key.transports) as never },
        requireUserVerification: false,
      });
      if (!out.verified) throw new Error('not verified');
      newCounter = out.authenticationInfo.newCounter;
      userVerified = out.authenticationInfo.userVerified === true;
    } catch (err) {
      if (/counter/i.test((err as Error).message)) throw fieldError('signature', 'The passkey\'s signature counter did not move forward: the authenticator may have been cloned.');
      throw refused();
    }
    await this.repo.write([this.repo.passkeys.useStep(c.id, key.id, key.counter, newCounter, nowDate(), { status: 400, code: 'validation_failed', message: 'Failed to validate the submitted data.', data: { signature: { code: 'validation_value', message: 'The passkey was used concurrently; sign in again.' } } })]);
    return { key, userVerified };
  }

  /**
   * The record's sign-in passkeys (GET …/records/:id/passkeys): id, created, lastUsed; second
   * factors are managed by the two-factor ceremonies and not listed.
   */
  signInKeys(c: Collection, recordId: string): Promise<PasskeyView[]> {
    return this.repo.passkeys.signInKeys(c.id, recordId);
  }

  /**
   * Deletes one of the record's sign-in passkeys (DELETE …/records/:id/passkeys/:passkeyId).
   * @throws ApiError 404 when the record has no such sign-in passkey
   */
  async deleteSignInKey(c: Collection, recordId: string, id: string): Promise<void> {
    await this.repo.write([this.repo.passkeys.removeSignInStep(c.id, recordId, id, { status: 404, code: 'not_found', message: 'The requested resource was not found.' })]);
  }

  /**
   * The passkey method's own routes (docs/api.md, "Passkeys
   * (WebAuthn)"):
   * - POST …/auth/webauthn/register/begin and /finish: 404 unless the method is on; the signed-in
   *   record of this collection (else 401), its session made by a primary sign-in within
   *   SERVICE_REAUTH_MAX_AGE (a passkey outlives the session: a stolen session must not be able
   *   to plant one), else 403 `reauthentication_required`; checked at both steps.
   * - GET and DELETE …/records/:id/passkeys[/:passkeyId]: a record's sign-in passkeys, shaped
   *   like its external-auths, never key material; the record's owner or a superuser.
   */
  routes(): readonly MethodRoute[] {
    const registrant = async (c: Collection, client: ClientInfo): Promise<MethodCaller> => {
      if (!this.enabled(c)) throw ApiError.notFound();
      const p = await this.access.ownCaller(c, client);
      this.access.requireRecent(p);
      return p;
    };
    return [
      { verb: 'post', path: 'auth/webauthn/register/begin', handle: async (c, _params, _body, client) => this.registerBegin(c, (await registrant(c, client)).record) },
      {
        verb: 'post', path: 'auth/webauthn/register/finish', handle: async (c, _params, body, client) => {
          const p = await registrant(c, client);
          await this.registerFinish(c, p.record, body());
          return {};
        },
      },
      {
        verb: 'get', path: 'records/:id/passkeys', handle: async (c, [recordId], _body, client) => {
          await this.requireOwner(c, recordId, client);
          return { items: await this.signInKeys(c, recordId) };
        },
      },
      {
        verb: 'del', path: 'records/:id/passkeys/:passkeyId', handle: async (c, [recordId, passkeyId], _body, client) => {
          await this.requireOwner(c, recordId, client);
          // a sign-in passkey counts as a second factor: under `required` the last factor stays,
          // as with the two-factor `remove` action
          if (twoFactorPolicy(c) === 'required' && (await this.signInKeys(c, recordId)).some((k) => k.id === passkeyId) && (await this.factorsOf(c, recordId, passkeyId)).length === 0) {
            throw ApiError.validation({ passkeyId: { code: 'validation_value', message: 'This passkey is the last second factor and the collection requires one: enroll another first.' } });
          }
          await this.deleteSignInKey(c, recordId, passkeyId);
          return undefined;
        },
      },
    ];
  }

  /** The passkey routes' access (like external-auths): 401 anonymous; 404 unless the caller is the record itself or a superuser (and, for a superuser, the record exists). */
  private async requireOwner(c: Collection, recordId: string, client: ClientInfo): Promise<void> {
    const p = await this.access.resolve(client);
    if (!p) throw ApiError.unauthorized();
    const own = p.collection.id === c.id && p.record.id === recordId;
    if (!own && !(p.superuser && (await this.loadRecord(c, recordId)))) throw ApiError.notFound();
  }

  async initiate(c: Collection, body: unknown, client: ClientInfo): Promise<Record<string, unknown>> {
    const identity = isObject(body) ? body.identity : undefined;
    await this.limits.enforce('auth-webauthn-initiate', c, this.limits.clientKeys(client, identity), this.slug);
    if (identity !== undefined && (typeof identity !== 'string' || identity.length > 320)) throw fieldError('identity', 'Must be a string of at most 320 characters.');
    // An identity binds the ceremony to its record (an unknown one to no record, so it can never
    // complete); the answer is the same either way.
    let bound = '';
    if (typeof identity === 'string' && identity.trim() !== '') {
      bound = (await this.repo.auth.idByIdentity(c, c.options.auth?.identityFields ?? ['email'], identity.trim())) ?? '-';
    }
    return this.assertionOptions(c, 'webauthn_login', bound, []);
  }

  async complete(c: Collection, body: unknown, client: ClientInfo): Promise<MethodResult> {
    const b = isObject(body) ? body : {};
    await this.limits.enforce('auth-webauthn-complete', c, this.limits.clientKeys(client, typeof b.credentialId === 'string' ? b.credentialId.slice(0, 100) : ''), this.slug);
    const { key, userVerified } = await this.verifyAssertion(c, 'webauthn_login', b, () => true);
    const record = await this.loadRecord(c, key.recordId);
    if (!record) throw fieldError('signature', 'The passkey assertion could not be verified.');
    return { record, passkey: { id: key.id, userVerified } };
  }
}

/** The credential id (base64url) inside an attestation object's authenticator data. */
function credentialIdOf(helpers: WebAuthnHelpers, attestationObject: string): string {
  const att = helpers.decodeAttestationObject(Buffer.from(attestationObject, 'base64url'));
  const id = helpers.parseAuthenticatorData(att.get('authData')).credentialID;
  if (!id) throw new Error('the attestation carries no credential');
  return Buffer.from(id).toString('base64url');
}

/** Adds to `errors` unless `o[k]` is a non-empty base64url string of bounded length. */
function byteString(o: Record<string, unknown>, k: string, errors: Record<string, FieldError>, label = k): void {
  const v = o[k];
  if (typeof v !== 'string' || v === '') errors[label] = { code: 'validation_required', message: 'Missing required value.' };
  else if (v.length > MAX_B64 || !B64URL.test(v)) errors[label] = { code: 'validation_value', message: 'Must be unpadded base64url.' };
}

function parseTransports(json: string): string[] {
  try {
    const v = JSON.parse(json);
    return Array.isArray(v) ? v.filter((t) => typeof t === 'string') : [];
  } catch {
    return [];
  }
}
