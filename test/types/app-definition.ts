// Type tests of the app definition ("type-level where types can say it"). Compiled by
// test/unit/app/types.test.ts with `tsc --noEmit`: every line marked @ts-expect-error must be a
// type error (an unused directive fails the compile), and the valid app must compile cleanly.
import { defineApp, ApiError, type AppHandle, type RouteContext } from 'svc';

// a valid app: handlers and events are typed
defineApp({
  features: ['vector'],
  pagination: { offset: true, cursor: true, cursorToken: 'signed' },
  hooks: {
    records: { posts: { beforeCreate: ({ record, auth }) => { record.owner = auth?.id ?? ''; } } },
    auth: { beforeAuthSuccess: ({ method }) => { if (method === 'password') return; } },
  },
  onAuthSuccess: async ({ method, record }) => { void method; void record.id; },
  routes: [{ method: 'GET', path: '/api/x/:id', auth: 'authed', handler: (ctx: RouteContext<AppHandle>) => ({ id: ctx.params.id }) }],
  jobs: [{ name: 'j', schedule: '*/5 * * * *', poolSize: 2, handler: async ({ app, job }) => { await app.records('posts').list(); void job; } }],
  authMethods: [{ slug: 'pin', complete: async () => 'recordid' }],
  flags: [{ name: 'f', default: false }],
  experiments: [{ name: 'e', variants: [{ name: 'a', weight: 1 }], sticky: true }],
  stateRoute: '/api/state',
});
new ApiError(400, 'validation_failed', 'x');

// @ts-expect-error unknown key
defineApp({ colections: [] });
// @ts-expect-error a feature the build does not know
defineApp({ features: ['warp-drive'] });
// @ts-expect-error cursorToken is stateless, signed or stateful
defineApp({ pagination: { cursorToken: 'random' } });
// @ts-expect-error an unknown record hook
defineApp({ hooks: { records: { posts: { beforeSave: () => {} } } } });
// @ts-expect-error an unknown auth hook
defineApp({ hooks: { auth: { onLogin: () => {} } } });
// @ts-expect-error a route method HTTP does not have here
defineApp({ routes: [{ method: 'FETCH', path: '/api/x', handler: () => ({}) }] });
// @ts-expect-error a route path must start with /
defineApp({ routes: [{ method: 'GET', path: 'api/x', handler: () => ({}) }] });
// @ts-expect-error an unknown auth mode
defineApp({ routes: [{ method: 'GET', path: '/api/x', auth: 'admin', handler: () => ({}) }] });
// @ts-expect-error a route needs a handler
defineApp({ routes: [{ method: 'GET', path: '/api/x' }] });
// @ts-expect-error poolSize is a number
defineApp({ jobs: [{ name: 'j', schedule: '* * * * *', poolSize: '2', handler: () => {} }] });
// @ts-expect-error a custom method's complete answers a record id
defineApp({ authMethods: [{ slug: 'pin', complete: () => 42 }] });
// @ts-expect-error a flag's default is a boolean
defineApp({ flags: [{ name: 'f', default: 'on' }] });
// @ts-expect-error a variant's weight is a number
defineApp({ experiments: [{ name: 'e', variants: [{ name: 'a', weight: 'half' }] }] });
// @ts-expect-error stateRoute is a path or false
defineApp({ stateRoute: true });
// @ts-expect-error the auth-success event's method is one of the spec's tags
defineApp({ onAuthSuccess: ({ method }) => { const m: 'password' | 'oauth2' = method; void m; } });
