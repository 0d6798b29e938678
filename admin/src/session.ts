/**
 * Superuser sessions: password sign-in with the second factor when `_superusers` asks for one,
 * the session restored on reload (auth-refresh with the HttpOnly cookie), sign-out. The token the
 * API returns in JSON is never kept: the cookies are the session.
 */
import { api, csrfToken } from './api';
import type { SuperuserRecord } from './types';

const SU = '/api/collections/_superusers';

/** What a sign-in step answered: signed in, or a second factor to give. */
export type SignInResult =
  | { status: 'authenticated'; record: SuperuserRecord; recoveryCodes?: string[] }
  | { status: 'factor_required' | 'enrollment_required'; pendingToken: string; factors: string[] };

interface AuthAnswer {
  status?: string;
  token?: string;
  record?: SuperuserRecord;
  pendingToken?: string;
  factors?: string[];
  recoveryCodes?: string[];
}

function result(a: AuthAnswer): SignInResult {
  if (a.status === 'factor_required' || a.status === 'enrollment_required') {
    return { status: a.status, pendingToken: a.pendingToken ?? '', factors: a.factors ?? ['totp'] };
  }
  return { status: 'authenticated', record: a.record as SuperuserRecord, recoveryCodes: a.recoveryCodes };
}

export async function signIn(identity: string, password: string): Promise<SignInResult> {
  return result(await api<AuthAnswer>('POST', `${SU}/auth-with-password`, { json: { identity, password }, session: false }));
}

/** Completes a pending sign-in with a TOTP or recovery code. */
export async function completeFactor(pendingToken: string, factor: 'totp' | 'recovery', code: string): Promise<SignInResult> {
  return result(await api<AuthAnswer>('POST', `${SU}/auth/two-factor/complete`, { json: { pendingToken, factor, code }, session: false }));
}

export interface TotpEnrollment {
  ceremonyId: string;
  secret: string;
  uri: string;
}

/** Starts a TOTP enrollment for a pending sign-in that must enroll first. */
export function beginTotpEnrollment(pendingToken: string): Promise<TotpEnrollment> {
  return api<TotpEnrollment>('POST', `${SU}/auth/two-factor/enroll-begin`, { json: { pendingToken, factor: 'totp' }, session: false });
}

export async function completeTotpEnrollment(pendingToken: string, ceremonyId: string, code: string): Promise<SignInResult> {
  return result(await api<AuthAnswer>('POST', `${SU}/auth/two-factor/enroll-complete`, { json: { pendingToken, factor: 'totp', ceremonyId, code }, session: false }));
}

/** The signed-in superuser from the cookies, or null (no cookie, expired, or not a superuser). */
export async function restoreSession(): Promise<SuperuserRecord | null> {
  if (!csrfToken()) return null;
  try {
    const a = await api<AuthAnswer>('POST', `${SU}/auth-refresh`, { session: false });
    return a.record ?? null;
  } catch {
    return null;
  }
}

export async function signOut(): Promise<void> {
  try {
    await api('POST', `${SU}/auth-logout`, { session: false });
  } catch {
    /* the cookies are cleared by the answer; a failure leaves nothing to do */
  }
}
