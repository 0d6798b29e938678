/**
 * Property-based fuzzing of a running svc, shared by test/e2e/fuzz.test.ts (seeded,
 * bounded, part of `npm test`) and scripts/fuzz.ts (`npm run fuzz -- --minutes=N`).
 *
 * Generators (fast-check) make list query strings (filters, sorts, `fields`, `expand`, cursors
 * taken from real answers and mutated, paging values, searches), JSON bodies for record creates
 * and updates (every JSON type for every field type, hostile keys, non-objects, broken JSON),
 * multipart bodies (well-formed and hostile: bad boundaries, truncated parts, huge headers,
 * `@jsonPayload` garbage) and collection definitions. The property for every answer: never a
 * 5xx or a dropped connection; an error is exactly the envelope {status, code, message, data}
 * with `status` equal to the HTTP status and `code` a registered one; a 2xx list has its shape.
 */
import fc from 'fast-check';
import { ACTIVE_CODES } from '../../src/errors/codes.js';
import type { Svc } from './server.js';

const CODES = new Set(ACTIVE_CODES.map((c) => c.code));
const FIELDS = ['title', 'n', 'price', 'flag', 'when', 'mail', 'site', 'kind', 'kinds', 'owner', 'owners', 'meta', 'body', 'doc', 'id', 'created', 'updated'];
const AUTH_FIELDS = ['email', 'verified', 'emailVisibility', 'passwordHash', 'tokenKey', 'nick', 'secret'];

/** The collections the generators aim at; made by `setupFuzzSchema`. */
export async function setupFuzzSchema(srv: Svc): Promise<{ ids: string[] }> {
  const people = await srv.createCollection({
    name: 'fz_people', type: 'auth', createRule: '@public', listRule: '@public', viewRule: '@public', updateRule: 'id = @request.auth.id',
    fields: [{ name: 'nick', type: 'text' }, { name: 'secret', type: 'text', options: { hidden: true } }],
  });
  await srv.createCollection({
    name: 'fz_items', listRule: '@public', viewRule: '@public', createRule: '@public', updateRule: '@public', deleteRule: null,
    fields: [
      { name: 'title', type: 'text', options: { max: 200, searchable: true } }, { name: 'n', type: 'number', options: { min: -1e9 } },
      { name: 'price', type: 'number', options: { mode: 'fixed', scale: 2 } }, { name: 'flag', type: 'bool' }, { name: 'when', type: 'date' },
      { name: 'mail', type: 'email' }, { name: 'site', type: 'url' }, { name: 'kind', type: 'select', options: { values: ['a', 'b', 'c'] } },
      { name: 'kinds', type: 'select', options: { values: ['a', 'b', 'c'], maxSelect: 3 } },
      { name: 'owner', type: 'relation', options: { collectionId: people.id } }, { name: 'owners', type: 'relation', options: { collectionId: people.id, maxSelect: 3 } },
      { name: 'meta', type: 'json' }, { name: 'body', type: 'editor' }, { name: 'doc', type: 'file', options: { maxSelect: 2, maxSize: 65536 } },
    ],
  });
  await srv.createCollection({ name: 'fz_locked', fields: [{ name: 'x', type: 'text' }, { name: 'item', type: 'relation', options: { collectionId: people.id } }] });
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) {
    const p = await srv.api('POST', '/api/collections/fz_people/records', { body: { email: `p${i}@example.com`, password: 'password123', nick: `nick${i}` } });
    ids.push(p.body.id);
    await srv.api('POST', '/api/collections/fz_items/records', { body: { title: `item ${i}`, n: i, price: `${i}.5`, kind: 'a', owner: p.body.id, meta: { i } } });
  }
  return { ids };
}

const nasty = fc.oneof(
  fc.string({ maxLength: 40 }), fc.string({ unit: 'binary', maxLength: 20 }),
  fc.constantFrom('', ' ', "'", '"', '\\', '%', '_', '\u0000', '\u001f', '😀', 'null', 'NaN', '1e999', '-0', '0x10', '((', '))', '&&', '||', '@request', '@request.auth.id', '@collection.x', '.', '..', '*', '-', ',', ';DROP TABLE x;--'),
);

// PocketBase's modifiers (docs/rules.md, "Modifiers"), valid and not, on any path
const modifier = fc.constantFrom('', '', '', ':lower', ':length', ':each', ':isset', ':changed', ':upper', ':');
const fieldPath = fc.oneof(
  fc.constantFrom(...FIELDS, ...AUTH_FIELDS), fc.constantFrom('owner.nick', 'owner.email', 'owner.secret', 'owners.nick', 'meta.a.b', 'owner.owner.x', 'title.x'), nasty,
  // joins and back-relations (docs/rules.md), valid and not, into open, locked and unknown collections
  fc.constantFrom('@collection.fz_items:i.title', '@collection.fz_people.nick', '@collection.fz_people.secret', '@collection.fz_locked:l.x', '@collection.nope.x', '@collection.fz_items',
    'owner.fz_items_via_owner.title', 'owner.fz_locked_via_item.x', 'owners.fz_items_via_owners.n', 'fz_items_via_owner.title', 'owner.fz_items_via_nope.x'),
  fc.tuple(fc.constantFrom(...FIELDS, 'owners.nick', 'owner.email'), modifier).map(([f, m]) => f + m),
);
const literal = fc.oneof(
  fc.integer().map(String), fc.double({ noNaN: true, noDefaultInfinity: true }).map(String), fc.constantFrom('null', 'true', 'false'),
  nasty.map((s) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`), nasty.map((s) => `"${s}"`), nasty,
  fc.constantFrom('@request.auth.id', '@request.auth.passwordHash', '@request.auth.collectionName', '@request.data.x', '@request.method', '@request.account.ids', '@request.nope'),
  // PocketBase's request and datetime macros (docs/rules.md), with modifiers, valid and not
  fc.tuple(
    fc.constantFrom('@request.body.title', '@request.body.kinds', '@request.query.q', '@request.query.filter', '@request.headers.user_agent', '@request.headers.x_y', '@request.context', '@now', '@yesterday', '@todayEnd', '@monthStart', '@year', '@weekday', '@nowish', '@request.headers.a.b'),
    modifier,
  ).map(([m, mod]) => m + mod),
);
const op = fc.constantFrom('=', '!=', '>', '>=', '<', '<=', '~', '!~', 'in', '==', '=>', '', '?=', '?!=', '?>', '?>=', '?<', '?<=', '?~', '?!~', '?', '?in');
const cmp = fc.tuple(fieldPath, op, literal).map(([f, o, v]) => (o === 'in' ? `${f} in (${v}, ${v})` : `${f} ${o} ${v}`));
/** Filters: comparisons joined by && and ||, parenthesised, sometimes broken. */
export const filterArb: fc.Arbitrary<string> = fc.letrec<{ expr: string }>((tie) => ({
  expr: fc.oneof({ depthSize: 'small', withCrossShrink: true }, cmp, cmp, fc.tuple(tie('expr'), fc.constantFrom('&&', '||', '&', '|', ''), tie('expr')).map(([a, j, b]) => `${a} ${j} ${b}`), tie('expr').map((e) => `(${e})`), tie('expr').map((e) => `(${e}`), nasty),
})).expr;

const sortArb = fc.array(fc.tuple(fc.constantFrom('', '-', '+', ' -', '--'), fc.oneof(fc.constantFrom(...FIELDS, '@random', '@rowid', 'email', 'secret'), nasty)).map(([d, f]) => d + f), { maxLength: 6 })
  .chain((parts) => fc.constantFrom(',', ' , ', ',,').map((sep) => parts.join(sep)));
const pathsArb = fc.array(fc.oneof(fc.constantFrom('*', 'id', 'title', 'expand.owner.nick', '-title', 'owner', 'owners.nick', 'owner.owner', 'secret', '-*'), nasty), { maxLength: 6 }).map((a) => a.join(','));
const pagingValue = fc.oneof(fc.integer({ min: -5, max: 100000 }).map(String), fc.constantFrom('', '0', '1', '500', '501', '1.5', 'abc', '99999999999999999999', 'true', '-0'), nasty);

/** One list query string (without `?`). `cursors`: tokens seen in earlier answers, to replay and mutate. */
export function listQueryArb(cursors: string[]): fc.Arbitrary<string> {
  const cursor = fc.oneof(
    fc.constantFrom('', ...cursors.slice(0, 20)),
    fc.tuple(fc.constantFrom('x', ...cursors.slice(0, 20)), fc.nat(60), fc.string({ maxLength: 4 })).map(([c, i, s]) => c.slice(0, i) + s + c.slice(i + s.length)),
    fc.jsonValue().map((v) => Buffer.from(JSON.stringify(v)).toString('base64url')),
    fc.string({ maxLength: 3000 }),
  );
  const entry = fc.oneof(
    filterArb.map((v) => ['filter', v]), sortArb.map((v) => ['sort', v]), pathsArb.map((v) => ['fields', v]), pathsArb.map((v) => ['expand', v]),
    pagingValue.map((v) => ['page', v]), pagingValue.map((v) => ['perPage', v]), pagingValue.map((v) => ['limit', v]), pagingValue.map((v) => ['skipTotal', v]),
    cursor.map((v) => ['cursor', v]), nasty.map((v) => ['search', v]), nasty.map((v) => ['q', v]), nasty.map((v) => ['vector', v]),
    fc.tuple(nasty, nasty),
  );
  return fc.array(entry, { maxLength: 6 }).map((pairs) => new URLSearchParams(pairs as [string, string][]).toString());
}

/** Any JSON value, hostile keys included. */
const jsonValue = fc.oneof(fc.jsonValue({ maxDepth: 3 }), nasty, fc.constantFrom(1e308, -1e308, 2 ** 53 + 1, 0.1, '2024-01-01 00:00:00.000Z', 'a@b.co', 'https://x.test', 'a', ['a', 'b'], { __proto__: { x: 1 } }));

/** A create or update body: an object of field values, or not an object at all. */
export const recordBodyArb: fc.Arbitrary<string> = fc.oneof(
  { weight: 8, arbitrary: fc.dictionary(fc.oneof(fc.constantFrom(...FIELDS, ...AUTH_FIELDS, 'password', 'passwordConfirm', 'oldPassword', 'externalAuths', 'doc+', 'doc-', '__proto__', 'constructor', '@jsonPayload'), nasty), jsonValue, { maxKeys: 8 }).map((o) => JSON.stringify(o)) },
  { weight: 1, arbitrary: fc.jsonValue().map((v) => JSON.stringify(v)) },
  { weight: 1, arbitrary: fc.oneof(fc.string({ maxLength: 50 }), fc.constantFrom('{', '{"a":', '[1,', 'nul', '{"title":"x"', '\u0000')) },
);

/** A collection definition for POST /api/collections (superuser). */
export const collectionBodyArb: fc.Arbitrary<string> = fc.record({
  name: fc.oneof(fc.constantFrom('fz_new', 'x', '_superusers', 'fz_items', 'a_fts', '1abc', 'select', ''), nasty),
  type: fc.constantFrom('base', 'auth', 'view', undefined, 5),
  fields: fc.array(fc.record({
    name: fc.oneof(fc.constantFrom('title', 'id', 'email', 'x_y', '', '_vec_a'), nasty),
    type: fc.constantFrom('text', 'number', 'bool', 'email', 'url', 'date', 'autodate', 'select', 'relation', 'json', 'editor', 'file', 'nope'),
    options: fc.dictionary(fc.constantFrom('min', 'max', 'pattern', 'values', 'maxSelect', 'collectionId', 'mode', 'scale', 'required', 'unique', 'encrypted', 'searchable', 'dimensions', 'vectorIndex', 'hidden'), jsonValue, { maxKeys: 4 }),
  }, { requiredKeys: [] }), { maxLength: 4 }),
  listRule: fc.option(filterArb), viewRule: fc.option(fc.constantFrom('@public', '', 'id = @request.auth.id')),
  indexes: fc.option(fc.array(fc.oneof(nasty, fc.constant('CREATE INDEX x ON y (z)')), { maxLength: 2 })),
  options: fc.option(fc.record({ ttl_field: fc.option(nasty), auth: fc.option(fc.dictionary(fc.constantFrom('two_factor', 'methods', 'minPasswordLength', 'identityFields', 'oauth2'), jsonValue, { maxKeys: 3 })) }, { requiredKeys: [] })),
}, { requiredKeys: [] }).map((o) => JSON.stringify(o));

/** A multipart body with its content type: well-formed or hostile. */
export const multipartArb: fc.Arbitrary<{ contentType: string; body: Buffer }> = fc.record({
  boundary: fc.oneof(fc.constantFrom('b0undary', 'x'.repeat(80), '', '"quoted"', 'a b'), fc.stringMatching(/^[A-Za-z0-9'()+_,-./:=?]{1,70}$/)),
  declared: fc.option(fc.constantFrom('other', '', 'b0undary')),
  parts: fc.array(fc.record({
    name: fc.oneof(fc.constantFrom('title', 'doc', 'doc+', 'doc-', '@jsonPayload', 'n', 'owner', ''), nasty),
    filename: fc.option(fc.oneof(fc.constantFrom('a.png', '../../etc/passwd', 'x'.repeat(300), ''), nasty)),
    type: fc.option(fc.constantFrom('image/png', 'text/plain', 'application/json', 'x/y', '')),
    content: fc.oneof(fc.string({ maxLength: 200 }), fc.constantFrom('\x89PNG\r\n\x1a\n\0\0\0\rIHDR', '{"title":"from payload"}', '{bad json', 'x'.repeat(70_000))),
    extraHeader: fc.option(fc.constantFrom('X-A: ' + 'h'.repeat(20_000), 'Content-Transfer-Encoding: base64', 'Content-Disposition: attachment')),
  }, { requiredKeys: ['name', 'content'] }), { maxLength: 5 }),
  truncate: fc.option(fc.nat(500)),
  closeBoundary: fc.boolean(),
}).map((m) => {
  let text = '';
  for (const p of m.parts) {
    text += `--${m.boundary}\r\nContent-Disposition: form-data; name="${p.name}"${p.filename !== null && p.filename !== undefined ? `; filename="${p.filename}"` : ''}\r\n`;
    if (p.type) text += `Content-Type: ${p.type}\r\n`;
    if (p.extraHeader) text += `${p.extraHeader}\r\n`;
    text += `\r\n${p.content}\r\n`;
  }
  if (m.closeBoundary) text += `--${m.boundary}--\r\n`;
  let body = Buffer.from(text);
  if (m.truncate !== null && m.truncate !== undefined) body = body.subarray(0, Math.max(0, body.length - m.truncate));
  const declared = m.declared ?? m.boundary;
  return { contentType: `multipart/form-data; boundary=${declared}`, body };
});

/** A request the fuzzer sends. */
export interface FuzzRequest {
  method: string;
  path: string;
  token?: 'su' | 'user' | null;
  contentType?: string;
  body?: string | Buffer;
}

/** Sends a request and checks the answer; returns a failure description or null. */
export async function probe(srv: Svc, tokens: { su: string; user: string }, r: FuzzRequest): Promise<string | null> {
  const headers: Record<string, string> = {};
  if (r.token) headers.authorization = `Bearer ${tokens[r.token]}`;
  if (r.contentType) headers['content-type'] = r.contentType;
  let res: Response;
  try {
    res = await fetch(srv.url + r.path, { method: r.method, headers, body: r.body, signal: AbortSignal.timeout(15_000) });
  } catch (err) {
    return `no answer (${(err as Error).message})`;
  }
  const text = await res.text();
  if (res.status >= 500) return `status ${res.status}: ${text.slice(0, 300)}`;
  if (res.status >= 400) {
    let body: any;
    try {
      body = JSON.parse(text);
    } catch {
      return `status ${res.status} without a JSON envelope: ${text.slice(0, 200)}`;
    }
    const keys = Object.keys(body ?? {}).join(',');
    if (keys !== 'status,code,message,data') return `envelope keys ${keys}: ${text.slice(0, 200)}`;
    if (body.status !== res.status) return `envelope status ${body.status} on HTTP ${res.status}`;
    if (!CODES.has(body.code)) return `unregistered code ${body.code}`;
    if (typeof body.message !== 'string' || typeof body.data !== 'object' || body.data === null) return `malformed envelope: ${text.slice(0, 200)}`;
    return null;
  }
  if (r.method === 'GET' && r.path.includes('/records?')) {
    let body: any;
    try {
      body = JSON.parse(text);
    } catch {
      return `list answer is not JSON: ${text.slice(0, 200)}`;
    }
    if (!Array.isArray(body.items) || typeof body.perPage !== 'number') return `list shape: ${text.slice(0, 200)}`;
  }
  return null;
}

/** Every kind of request the fuzzer makes, as one arbitrary. */
export function requestArb(cursors: string[], ids: string[]): fc.Arbitrary<FuzzRequest> {
  const col = fc.constantFrom('fz_items', 'fz_people', 'fz_locked', '_superusers', 'nope');
  const who = fc.constantFrom<'su' | 'user' | null>('su', 'user', null);
  const id = fc.oneof(fc.constantFrom(...ids, 'aaaaaaaaaaaaaaa'), nasty.map(encodeURIComponent));
  return fc.oneof(
    { weight: 5, arbitrary: fc.tuple(col, listQueryArb(cursors), who).map(([c, q, t]) => ({ method: 'GET', path: `/api/collections/${c}/records?${q}`, token: t })) },
    { weight: 1, arbitrary: fc.tuple(col, id, pathsArb, who).map(([c, i, e, t]) => ({ method: 'GET', path: `/api/collections/${c}/records/${i}?expand=${encodeURIComponent(e)}&fields=${encodeURIComponent(e)}`, token: t })) },
    { weight: 3, arbitrary: fc.tuple(col, recordBodyArb, who).map(([c, b, t]) => ({ method: 'POST', path: `/api/collections/${c}/records`, token: t, contentType: 'application/json', body: b })) },
    { weight: 2, arbitrary: fc.tuple(col, id, recordBodyArb, who).map(([c, i, b, t]) => ({ method: 'PATCH', path: `/api/collections/${c}/records/${i}`, token: t, contentType: 'application/json', body: b })) },
    { weight: 2, arbitrary: fc.tuple(multipartArb, who).map(([m, t]) => ({ method: 'POST', path: '/api/collections/fz_items/records', token: t, contentType: m.contentType, body: m.body })) },
    { weight: 1, arbitrary: fc.tuple(multipartArb, id).map(([m, i]) => ({ method: 'PATCH', path: `/api/collections/fz_items/records/${i}`, token: 'su' as const, contentType: m.contentType, body: m.body })) },
    { weight: 1, arbitrary: collectionBodyArb.map((b) => ({ method: 'POST', path: '/api/collections', token: 'su' as const, contentType: 'application/json', body: b })) },
    { weight: 1, arbitrary: fc.tuple(recordBodyArb, col).map(([b, c]) => ({ method: 'POST', path: `/api/collections/${c}/auth-with-password`, contentType: 'application/json', body: b })) },
  );
}

/** First-page cursors of a few sorts, for the cursor generators to replay and mutate. */
export async function collectCursors(srv: Svc): Promise<string[]> {
  const out: string[] = [];
  for (const sort of ['', '-n', 'title,-created', 'price', '-when']) {
    const r = await srv.api('GET', `/api/collections/fz_items/records?limit=1&sort=${encodeURIComponent(sort)}`);
    if (typeof r.body?.nextCursor === 'string') out.push(r.body.nextCursor);
  }
  return out;
}
