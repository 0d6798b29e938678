/**
 * The sign-in methods by slug (docs/auth.md), in one home for the
 * two sides that ask them (ARCHITECTURE.md, "Folders": src/auth):
 * - the collection input (src/collections/collection-input.ts) validates
 *   `options.auth.methods.<slug>` by asking the method registered under the slug
 *   (`signInMethods`, process-wide, like the set of slugs a server accepts);
 * - AuthService keeps its running methods (AuthMethod instances, bound to its store) in a
 *   MethodRegistry of its own and signs in through them.
 * Both hold the built-in methods and an app's custom methods (src/app/runtime.ts), so the
 * collections folder never imports a method module.
 */
import type { FieldError } from '../errors/api-error.js';
import { lifetimeOptionErrors, type MethodOptionsCheck } from './methods/method.js';
import { passwordOptions } from './methods/password.js';
import { magicLinkOptions } from './methods/magic-link.js';
import { otpOptions } from './methods/otp.js';
import { oauth2Options } from './methods/oauth2.js';
import { webauthnOptions } from './methods/webauthn.js';

export type { MethodOptionsCheck } from './methods/method.js';

/** The option checks of the methods this server implements, in their documented order. */
const BUILT_IN: readonly MethodOptionsCheck[] = [passwordOptions, magicLinkOptions, otpOptions, oauth2Options, webauthnOptions];

/** The built-in method slugs (an app's custom method may not take one; its sign-ins are tagged `custom`). */
export const BUILT_IN_METHOD_SLUGS: readonly string[] = BUILT_IN.map((m) => m.slug);

/** Methods by slug: a Map with `add` (by the method's own slug) and the options check by slug. */
export class MethodRegistry<M extends MethodOptionsCheck> extends Map<string, M> {
  /** Registers `m` under its slug (replacing a method of the same slug). */
  add(m: M): this {
    return this.set(m.slug, m);
  }

  /**
   * The errors of `options.auth.methods.<slug>` (keys under `path`) as the method registered
   * under `slug` answers them. A slug no method answers to (options stored for a method that is
   * off and not implemented) gets the `ttl_s` check every method had before methods owned their
   * checks (lifetimeOptionErrors).
   */
  optionErrors(slug: string, options: Record<string, unknown>, path: string): Record<string, FieldError> {
    const m = this.get(slug);
    return m ? m.checkOptions(options, path) : lifetimeOptionErrors(options, path);
  }
}

/**
 * The methods whose options a collection may turn on, process-wide: the built-ins, plus an
 * embedding app's custom methods, registered at start (src/server.ts) before any collection is
 * validated. Enabling a slug not registered here is refused rather than stored and ignored.
 */
export const signInMethods = new MethodRegistry<MethodOptionsCheck>(BUILT_IN.map((m) => [m.slug, m]));
