/** Record routes: list, view, abilities, create, update, delete (spec 1-core-api.md, "Records"). */
import { ApiError } from '../errors/api-error.js';
import type { Reply, Req, Route } from '../http/types.js';
import { json, noContent } from '../http/types.js';
import type { ApiContext } from './context.js';
import { jsonBody, query } from './request.js';
import type { Principal } from '../domain/access.js';
import type { Collection } from '../domain/types.js';
import { hidePrivate, readShape, type ReadShape } from '../domain/records-read.js';
import { stripServerManaged } from '../domain/records-write.js';

const BASE = '/api/collections/:col/records';

export function recordRoutes(ctx: ApiContext): Route[] {
  const { store, reads, writes, auth } = ctx;

  /** Serializes one stored row as the response record (private fields hidden, expand, fields). */
  const respond = async (status: number, c: Collection, row: unknown[], principal: Principal | null, shape: ReadShape, headers?: Array<[string, string]>): Promise<Reply> => {
    const codec = store.codec(c);
    const rec = codec.fromRow(row);
    hidePrivate(c, rec, principal);
    const [out] = await reads.finish(c, [rec], principal, shape);
    return json(status, codec.stringify(out), headers);
  };

  const view = (req: Req): Reply | Promise<Reply> => {
    const c = store.collection(req.params[0]);
    const shape = readShape(query(req));
    const principal = auth.resolve(req);
    const codec = store.codec(c);
    if (!(principal instanceof Promise) && !shape.expand) {
      const rec = reads.viewSync(c, req.params[1], principal, shape)!;
      return json(200, codec.stringify(rec));
    }
    return (async () => {
      const p = await principal;
      const rec = await reads.view(c, req.params[1], p, shape);
      return json(200, codec.stringify(rec));
    })();
  };

  return [
    {
      method: 'get', pattern: BASE, handler: async (req) => {
        const c = store.collection(req.params[0]);
        const principal = await auth.resolve(req);
        return json(200, await reads.list(c, principal, query(req)));
      },
    },
    { method: 'get', pattern: `${BASE}/:id`, handler: view },
    {
      method: 'get', pattern: `${BASE}/:id/abilities`, handler: async (req) => {
        const c = store.collection(req.params[0]);
        const principal = await auth.resolve(req);
        return json(200, JSON.stringify(reads.abilities(c, req.params[1], principal)));
      },
    },
    {
      method: 'post', pattern: BASE, handler: async (req) => {
        const c = store.collection(req.params[0]);
        const principal = await auth.resolve(req);
        const body = stripServerManaged(c, jsonBody(req));
        const { row } = await writes.create(c, principal, body);
        return respond(201, c, row, principal, readShape(query(req)));
      },
    },
    {
      method: 'patch', pattern: `${BASE}/:id`, handler: async (req) => {
        const c = store.collection(req.params[0]);
        const principal = await auth.resolve(req);
        const body = stripServerManaged(c, jsonBody(req));
        const { row, passwordChanged } = await writes.update(c, req.params[1], principal, body);
        let headers: Array<[string, string]> | undefined;
        const owner = principal && !principal.superuser && principal.collection.id === c.id && principal.record.id === req.params[1];
        if (passwordChanged && owner) {
          // The owner keeps a session: fresh auth and CSRF cookies under the new token key.
          const fresh = auth.loadAuthRecord(c, req.params[1]);
          if (fresh) {
            const { token, csrf } = await auth.tokens.issue(c.id, req.params[1], String(fresh.tokenKey), Number(fresh.token_epoch));
            headers = auth.sessionCookies(token, csrf);
          }
        }
        return respond(200, c, row, principal, readShape(query(req)), headers);
      },
    },
    {
      method: 'del', pattern: `${BASE}/:id`, handler: async (req) => {
        const c = store.collection(req.params[0]);
        const principal = await auth.resolve(req);
        await writes.delete(c, req.params[1], principal);
        return noContent();
      },
    },
  ];
}

export function requireAuthCollection(c: Collection): void {
  if (c.type !== 'auth') throw ApiError.notFound('Not an auth collection.');
}
