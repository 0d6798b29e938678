// The sign-in method registry (src/auth/method-registry.ts): the collection input asks the method
// registered under a slug for its options check; a slug no method answers to gets the `ttl_s`
// check; an app's custom method is registered by its own slug.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BUILT_IN_METHOD_SLUGS, MethodRegistry, signInMethods, type MethodOptionsCheck } from '../../../src/auth/method-registry.js';

const at = (slug: string) => `options.auth.methods.${slug}`;
const TTL = { code: 'validation_value', message: 'Must be an integer number of seconds from 30 to 604800.' };

test('the built-in methods, in spec order', () => {
  assert.deepEqual(BUILT_IN_METHOD_SLUGS, ['password', 'magic_link', 'otp', 'oauth2', 'webauthn']);
  for (const slug of BUILT_IN_METHOD_SLUGS) assert.equal(signInMethods.get(slug)?.slug, slug);
});

test('each method answers for its own options, keyed under the path', () => {
  assert.deepEqual(signInMethods.optionErrors('otp', { ttl_s: 5 }, at('otp')), { [`${at('otp')}.ttl_s`]: TTL });
  assert.deepEqual(Object.keys(signInMethods.optionErrors('magic_link', { redirect_default: 'x', redirect_allow: ['../y'] }, at('magic_link'))), [`${at('magic_link')}.redirect_default`, `${at('magic_link')}.redirect_allow`]);
  assert.deepEqual(signInMethods.optionErrors('oauth2', { enabled: true, providers: [] }, at('oauth2')), {
    [`${at('oauth2')}.providers`]: { code: 'validation_value', message: 'OAuth2 needs at least one provider to be enabled.' },
  });
  assert.ok(`${at('oauth2')}.providers.0.clientId` in signInMethods.optionErrors('oauth2', { providers: [{ name: 'g', kind: 'google', clientId: '', redirectUrls: ['https://a.example/cb'] }] }, at('oauth2')));
  assert.deepEqual(Object.keys(signInMethods.optionErrors('webauthn', { enabled: true }, at('webauthn'))), [`${at('webauthn')}.rpId`, `${at('webauthn')}.origins`]);
  assert.deepEqual(signInMethods.optionErrors('webauthn', { ttl_s: 5 }, at('webauthn')), {}, 'no ttl_s check for passkeys');
  assert.deepEqual(signInMethods.optionErrors('password', {}, at('password')), {});
});

test('an unregistered slug gets the ttl_s check; a registered custom method its own', () => {
  assert.deepEqual(signInMethods.optionErrors('nowhere', { ttl_s: 1 }, at('nowhere')), { [`${at('nowhere')}.ttl_s`]: TTL });
  const reg = new MethodRegistry<MethodOptionsCheck>();
  reg.add({ slug: 'pin', checkOptions: (m, path) => ('digits' in m ? {} : { [`${path}.digits`]: { code: 'validation_required', message: 'Missing required value.' } }) });
  assert.equal(reg.has('pin'), true);
  assert.deepEqual(Object.keys(reg.optionErrors('pin', {}, at('pin'))), [`${at('pin')}.digits`]);
});
