/** Auth endpoints: auth-with-password, auth-refresh, auth-logout (spec 1-core-api.md, "Auth endpoints"). */
import type { Route } from '../http/types.js';
import { json, noContent } from '../http/types.js';
import type { ApiContext } from './context.js';
import { jsonBody } from './request.js';
import { requireAuthCollection } from './records.js';
import { hidePrivate } from '../domain/records-read.js';
import type { Collection } from '../domain/types.js';

export function authRoutes(ctx: ApiContext): Route[] {
  const { store, auth } = ctx;
  const body = (c: Collection, token: string, record: Record<string, unknown>) => {
    const codec = store.codec(c);
    const visible: Record<string, unknown> = {};
    for (const k of Object.keys(record)) if (k !== 'passwordHash' && k !== 'tokenKey' && k !== 'token_epoch') visible[k] = record[k];
    hidePrivate(c, visible, { superuser: false, collection: c, record });
    return `{"token":${JSON.stringify(token)},"record":${codec.stringify(visible)}}`;
  };
  return [
    {
      method: 'post', pattern: '/api/collections/:col/auth-with-password', handler: async (req) => {
        const c = store.collection(req.params[0]);
        requireAuthCollection(c);
        const { record, token, csrf } = await auth.authWithPassword(c, jsonBody(req));
        return json(200, body(c, token, record), auth.sessionCookies(token, csrf));
      },
    },
    {
      method: 'post', pattern: '/api/collections/:col/auth-refresh', handler: async (req) => {
        const c = store.collection(req.params[0]);
        requireAuthCollection(c);
        const { record, token, csrf } = await auth.refresh(c, await auth.resolve(req));
        return json(200, body(c, token, record), auth.sessionCookies(token, csrf));
      },
    },
    {
      method: 'post', pattern: '/api/collections/:col/auth-logout', handler: (req) => {
        const c = store.collection(req.params[0]);
        requireAuthCollection(c);
        return noContent(auth.clearCookies());
      },
    },
  ];
}
