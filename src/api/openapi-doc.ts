/**
 * The OpenAPI 3.1 document of `GET /api/openapi.json` (docs/api.md, "OpenAPI document"): the
 * fixed routes of docs/api.md, every other route of the server's table with a minimal entry, and
 * per collection its record routes with the collection's fields as component schemas. The
 * value shapes come from src/model/field-shapes.ts, which `svc typegen` renders as TypeScript.
 */
import type { Collection, RuleName } from '../model/schema.js';
import { answerFields, collectionStems, createFields, type ShapedField, type ShapeScalar, type ValueShape } from '../model/field-shapes.js';

/** A JSON Schema (2020-12, OpenAPI 3.1's dialect) or an OpenAPI object, as plain JSON. */
type Json = Record<string, unknown>;

/** What the document is built from. */
export interface OpenApiInput {
  /** the collections to describe, in any order */
  collections: readonly Collection[];
  /** svc's version (`info.version`) */
  version: string;
  /** the route table's method and pattern of each route (`:name` parameters), to list the routes the fixed part does not describe */
  routes: ReadonlyArray<{ method: string; pattern: string }>;
  /** false: the public document (SERVICE_OPENAPI_PUBLIC), whose operations carry no rule text */
  showRules: boolean;
}

const ref = (name: string): Json => ({ $ref: `#/components/schemas/${name}` });
const jsonContent = (schema: Json): Json => ({ 'application/json': { schema } });
const ok = (description: string, schema?: Json): Json => (schema ? { description, content: jsonContent(schema) } : { description });
const obj = (properties: Record<string, Json>, required: string[] = Object.keys(properties), extra: Json = {}): Json => ({ type: 'object', properties, required, ...extra });
const str: Json = { type: 'string' };
const int: Json = { type: 'integer' };
const bool: Json = { type: 'boolean' };
const anyObject: Json = { type: 'object' };

/** The error statuses of docs/api.md, "Errors", each a shared response with the envelope. */
const ERROR_RESPONSES: Record<number, string> = {
  400: 'Bad request or failed validation (`bad_request`, `validation_failed`, `batch_failed`)',
  401: 'Missing, bad or expired credentials (`unauthorized`)',
  403: 'Not allowed (`forbidden`, `email_not_verified`, `reauthentication_required`)',
  404: 'Absent, hidden, or a disabled route (`not_found`)',
  409: 'A unique value or id is taken (`conflict`)',
  410: 'A stateful cursor expired (`gone`)',
  413: 'The body is over its limit (`payload_too_large`)',
  429: 'Rate limited (`too_many_requests`)',
  502: 'An outside service (an OAuth2 provider, the mail transport) failed (`bad_gateway`)',
  503: 'Overloaded or shutting down (`overloaded`)',
};

/** The shared component schemas that do not depend on the collections. */
function baseSchemas(): Record<string, Json> {
  return {
    Error: obj({
      status: int,
      code: { type: 'string', description: 'frozen: match on it (`npx svc explain-code <code>`)' },
      message: { type: 'string', description: 'for people' },
      data: { type: 'object', description: 'validation_failed: each field\'s `{code, message}`; batch_failed: `requests.<index>`', additionalProperties: true },
    }, undefined, { additionalProperties: false, description: 'The error envelope: every error body has exactly these keys (docs/api.md, "Errors").' }),
    IsoDate: { type: 'string', description: 'A date as svc stores and answers it: `2024-01-02 03:04:05.678Z`.', examples: ['2024-01-02 03:04:05.678Z'] },
    RecordId: { type: 'string', pattern: '^[a-z0-9]{15}$', description: 'A record id: 15 characters of `[a-z0-9]`, time-ordered.' },
    Record: obj({
      collectionId: str, collectionName: str, id: ref('RecordId'), created: ref('IsoDate'), updated: ref('IsoDate'),
    }, ['collectionId', 'collectionName', 'id'], { additionalProperties: true, description: 'A record of any collection: the base fields, then the collection\'s fields.' }),
    CollectionField: obj({
      id: str, name: str, type: { enum: ['text', 'number', 'bool', 'email', 'url', 'date', 'autodate', 'select', 'relation', 'json', 'editor', 'file'] },
      system: bool, options: anyObject,
    }, ['name', 'type'], { additionalProperties: true }),
    Collection: obj({
      id: str, name: str, type: { enum: ['base', 'auth'] }, system: bool,
      schema: { type: 'array', items: ref('CollectionField') }, fields: { type: 'array', items: ref('CollectionField'), description: 'the same list as `schema` (PocketBase\'s name)' },
      indexes: { type: 'array' }, options: anyObject,
      listRule: { type: ['string', 'null'] }, viewRule: { type: ['string', 'null'] }, createRule: { type: ['string', 'null'] },
      updateRule: { type: ['string', 'null'] }, deleteRule: { type: ['string', 'null'] }, created: str, updated: str,
    }),
    CollectionInput: { type: 'object', description: 'A collection definition: `name`, `type`, `fields` (or `schema`), `indexes`, `options` and the five rules (docs/api.md, "Collections").', properties: { name: str, type: { enum: ['base', 'auth'] }, fields: { type: 'array', items: ref('CollectionField') } } },
    AuthAnswer: obj({ token: str, record: ref('Record') }, ['token', 'record'], { additionalProperties: true, description: 'A signed-in record and its token (7 days); cookies `svc_auth` and `svc_csrf` are set too.' }),
    SecondFactorRequired: obj({
      status: { enum: ['factor_required', 'enrollment_required'] }, pendingToken: str, expiresIn: int,
      factors: { type: 'array', items: str }, recoveryCodes: int,
    }, ['status', 'pendingToken', 'expiresIn', 'factors'], { description: 'A primary sign-in that needs a second factor (docs/api.md, "Two-factor"); no cookies are set.' }),
    Identity: obj({ identity: str, password: str }),
    Email: obj({ email: str }),
    Token: obj({ token: str }),
  };
}

/** The query parameters of record lists and views (docs/api.md, "List records"). */
function parameters(): Record<string, Json> {
  const q = (name: string, description: string, schema: Json = str): Json => ({ name, in: 'query', required: false, description, schema });
  return {
    filter: q('filter', 'A filter expression (docs/rules.md, "Filters").'),
    sort: q('sort', '`-created,title` (`-` descending; `@random`, `@rowid`).'),
    page: q('page', 'Offset paging: the page, from 1.', { type: 'integer', minimum: 1 }),
    perPage: q('perPage', 'Offset paging: rows per page (default 30, at most 500).', { type: 'integer', minimum: 1, maximum: 500 }),
    skipTotal: q('skipTotal', '`true`: `totalItems` and `totalPages` are -1.', { type: 'string', enum: ['true', 'false', '1', '0'] }),
    cursor: q('cursor', 'Cursor paging: `nextCursor` or `prevCursor` of the previous page.'),
    limit: q('limit', 'Cursor paging: rows per page.', { type: 'integer', minimum: 1, maximum: 500 }),
    expand: q('expand', 'Relations to embed: `author,comments.author` (up to 6 levels).'),
    fields: q('fields', 'Projection: `id,title,expand.author.name`, `-body`, `*`.'),
    search: q('search', 'Full-text search over `searchable` fields (`q` too).'),
    vector: q('vector', '`field:[0.1,0.2]` or `field:l2:[…]` (feature `vector`).'),
  };
}

const LIST_PARAMS = ['filter', 'sort', 'page', 'perPage', 'skipTotal', 'cursor', 'limit', 'expand', 'fields', 'search', 'vector'];
const VIEW_PARAMS = ['expand', 'fields'];
const paramRefs = (names: string[]): Json[] => names.map((n) => ({ $ref: `#/components/parameters/${n}` }));

/** A list answer of `item`: an offset page or a cursor page. */
function listPage(item: Json): Json {
  const items = { type: 'array', items: item };
  return {
    anyOf: [
      obj({ page: int, perPage: int, totalItems: int, totalPages: int, items }),
      obj({ page: { const: 0 }, perPage: int, nextCursor: { type: ['string', 'null'] }, prevCursor: { type: ['string', 'null'] }, hasNext: bool, hasPrev: bool, items }),
    ],
  };
}

/** One operation, in short. */
interface Op {
  tag: string;
  summary: string;
  /** who may call it, as docs/api.md's route table says */
  who: string;
  /** a JSON body; `multipart` adds a multipart/form-data one */
  body?: Json;
  multipart?: Json;
  /** the success status, its description and body schema (none: empty) */
  ok: [number, string, Json?];
  /** error statuses besides the always-possible ones (503) */
  errors?: number[];
  params?: Json[];
  /** the access rule's text (per-collection operations, superuser document) */
  rule?: string | null;
  operationId?: string;
}

/** Path parameter descriptions by name (`{name}` in a path). */
const PATH_PARAMS: Record<string, string> = {
  collection: 'A collection\'s name or id.',
  idOrName: 'A collection\'s id or name.',
  id: 'A record id.',
  sid: 'A session id.',
  method: 'A sign-in method slug: `password`, `magic_link`, `otp`, `oauth2`, `webauthn` or an app\'s custom method.',
  action: 'A two-factor action: `enroll`, `enroll-begin`, `enroll-complete`, `initiate`, `complete`, `replace-recovery`, `remove`.',
  recordId: 'A record id.',
  filename: 'A stored file name.',
  key: 'A setting key.',
};

function operation(path: string, method: string, op: Op): Json {
  const out: Json = { tags: [op.tag], summary: op.summary, description: `Who: ${op.who}.` };
  if (op.operationId) out.operationId = op.operationId;
  const pathParams = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => ({ name: m[1], in: 'path', required: true, description: PATH_PARAMS[m[1]!] ?? m[1], schema: str }));
  const params = [...pathParams, ...(op.params ?? [])];
  if (params.length) out.parameters = params;
  if (op.body) {
    const content: Json = jsonContent(op.body);
    if (op.multipart) content['multipart/form-data'] = { schema: op.multipart };
    out.requestBody = { required: true, content };
  }
  const [status, description, schema] = op.ok;
  const responses: Json = { [String(status)]: ok(description, schema) };
  for (const e of op.errors ?? []) responses[String(e)] = { $ref: `#/components/responses/E${e}` };
  responses['503'] = { $ref: '#/components/responses/E503' };
  out.responses = responses;
  if (op.rule !== undefined) out['x-svc-rule'] = op.rule;
  return out;
}

const SIGNED = [401];
const AUTH_ANSWER = ref('AuthAnswer');
const AUTH_OR_FACTOR = { anyOf: [ref('AuthAnswer'), ref('SecondFactorRequired')] };

/** The fixed routes (docs/api.md), as [method, path, operation]. */
function fixedOperations(): Array<[string, string, Op]> {
  const C = '/api/collections/{collection}';
  const su = 'superusers (401 anonymous, 403 others)';
  return [
    ['get', '/api/health', { tag: 'Probes', summary: 'Liveness (no database access)', who: 'anyone', ok: [200, 'The version report', obj({ status: { const: 'ok' }, backend: { enum: ['libsql', 'postgres'] }, svc: str, commit: str, components: anyObject, http: anyObject }, ['status', 'backend', 'svc'])] }],
    ['get', '/api/meta', { tag: 'Probes', summary: 'Discovery: version, capabilities, endpoints, limits', who: 'anyone', ok: [200, 'The discovery document', obj({ svc: str, commit: str, api: int, capabilities: anyObject, endpoints: anyObject, limits: anyObject })] }],
    ['get', '/api/openapi.json', { tag: 'Probes', summary: 'This document', who: 'superusers, or anyone with SERVICE_OPENAPI_PUBLIC=1', ok: [200, 'An OpenAPI 3.1 document', anyObject], errors: [401, 403] }],
    ['get', '/api/_/install', { tag: 'Install', summary: 'Whether a superuser exists', who: 'anyone', ok: [200, 'The install state', obj({ installed: bool })] }],
    ['post', '/api/_/install', { tag: 'Install', summary: 'Create the first superuser with the one-time install token', who: 'a loopback client with the install token', body: obj({ token: str, email: str, password: str }), ok: [201, 'The superuser created', obj({ id: str, email: str })], errors: [400, 401, 403, 404] }],
    ['get', '/api/collections', { tag: 'Collections', summary: 'List collections', who: su, ok: [200, 'Every collection', obj({ items: { type: 'array', items: ref('Collection') } })], errors: [401, 403] }],
    ['post', '/api/collections', { tag: 'Collections', summary: 'Create a collection', who: su, body: ref('CollectionInput'), ok: [201, 'The collection', ref('Collection')], errors: [400, 401, 403] }],
    ['get', '/api/collections/{idOrName}', { tag: 'Collections', summary: 'View a collection', who: su, ok: [200, 'The collection', ref('Collection')], errors: [401, 403, 404] }],
    ['patch', '/api/collections/{idOrName}', { tag: 'Collections', summary: 'Update a collection (`fields` replaces the list)', who: su, body: ref('CollectionInput'), ok: [200, 'The collection', ref('Collection')], errors: [400, 401, 403, 404] }],
    ['delete', '/api/collections/{idOrName}', { tag: 'Collections', summary: 'Delete a collection', who: su, ok: [204, 'Deleted'], errors: [400, 401, 403, 404] }],
    ['get', `${C}/records`, { tag: 'Records', summary: 'List records (any collection)', who: 'the list rule', params: paramRefs(LIST_PARAMS), ok: [200, 'A page', listPage(ref('Record'))], errors: [400, 403, 404, 410], operationId: 'listRecords' }],
    ['post', `${C}/records`, { tag: 'Records', summary: 'Create a record (any collection)', who: 'the create rule', params: paramRefs(VIEW_PARAMS), body: anyObject, multipart: anyObject, ok: [201, 'The record', ref('Record')], errors: [400, 403, 404, 409, 413], operationId: 'createRecord' }],
    ['get', `${C}/records/{id}`, { tag: 'Records', summary: 'View a record (any collection)', who: 'the view rule', params: paramRefs(VIEW_PARAMS), ok: [200, 'The record', ref('Record')], errors: [400, 404], operationId: 'viewRecord' }],
    ['patch', `${C}/records/{id}`, { tag: 'Records', summary: 'Update a record (any collection)', who: 'the update rule', params: paramRefs(VIEW_PARAMS), body: anyObject, multipart: anyObject, ok: [200, 'The record', ref('Record')], errors: [400, 404, 409, 413], operationId: 'updateRecord' }],
    ['delete', `${C}/records/{id}`, { tag: 'Records', summary: 'Delete a record (any collection)', who: 'the delete rule', ok: [204, 'Deleted'], errors: [404], operationId: 'deleteRecord' }],
    ['get', `${C}/records/{id}/abilities`, { tag: 'Records', summary: 'What the caller may do with a record', who: 'the view rule', ok: [200, 'The abilities', obj({ view: bool, update: bool, delete: bool })], errors: [404] }],
    ['post', '/api/batch', {
      tag: 'Batch', summary: 'Several record writes in one transaction', who: 'each request\'s rule',
      body: obj({ requests: { type: 'array', items: obj({ method: { enum: ['POST', 'PATCH', 'DELETE', 'PUT'] }, url: str, body: anyObject, headers: anyObject }, ['method', 'url']) } }),
      multipart: obj({ '@jsonPayload': str }),
      ok: [200, 'Each request\'s answer, in order', { type: 'array', items: obj({ status: int, body: {} }) }], errors: [400, 413],
    }],
    ['post', `${C}/auth-with-password`, { tag: 'Auth', summary: 'Sign in with a password', who: 'anyone', body: ref('Identity'), ok: [200, 'Signed in (or a second factor is needed)', AUTH_OR_FACTOR], errors: [400, 403, 404, 429] }],
    ['post', `${C}/auth-refresh`, { tag: 'Auth', summary: 'A fresh token for the signed-in record', who: 'the signed-in record', ok: [200, 'Signed in', AUTH_ANSWER], errors: [401, 403, 404] }],
    ['post', `${C}/auth-logout`, { tag: 'Auth', summary: 'Clear the cookies (and end the session row)', who: 'anyone', ok: [204, 'Logged out'] }],
    ['get', `${C}/auth/sessions`, { tag: 'Auth', summary: 'The record\'s sessions (table store)', who: 'the signed-in record', ok: [200, 'Sessions, newest first', obj({ items: { type: 'array', items: obj({ id: str, created: str, last_seen: str, user_agent: str, ip: str, is_current: bool }) } })], errors: [401, 404] }],
    ['delete', `${C}/auth/sessions`, { tag: 'Auth', summary: 'Log out everywhere', who: 'the signed-in record', ok: [204, 'Every token of the record ended'], errors: [401, 404] }],
    ['delete', `${C}/auth/sessions/{sid}`, { tag: 'Auth', summary: 'End one session', who: 'the signed-in record', ok: [204, 'Ended'], errors: [401, 404] }],
    ['post', `${C}/request-verification`, { tag: 'Auth', summary: 'Mail a verification link', who: 'anyone', body: ref('Email'), ok: [204, 'Accepted, whether or not the address exists'], errors: [400, 404, 429] }],
    ['post', `${C}/confirm-verification`, { tag: 'Auth', summary: 'Confirm an address', who: 'anyone', body: ref('Token'), ok: [204, 'Verified'], errors: [400, 404] }],
    ['post', `${C}/request-password-reset`, { tag: 'Auth', summary: 'Mail a password reset link', who: 'anyone', body: ref('Email'), ok: [204, 'Accepted, whether or not the address exists'], errors: [400, 404, 429] }],
    ['post', `${C}/confirm-password-reset`, { tag: 'Auth', summary: 'Set a new password with a reset token', who: 'anyone', body: obj({ token: str, password: str, passwordConfirm: str }, ['token', 'password']), ok: [204, 'Reset; every session ended'], errors: [400, 404] }],
    ['post', `${C}/auth/{method}/initiate`, { tag: 'Auth', summary: 'Start a sign-in method', who: 'anyone', body: anyObject, ok: [200, 'The method\'s first step (204 for magic_link and otp)', anyObject], errors: [400, 404, 429] }],
    ['post', `${C}/auth/{method}/complete`, { tag: 'Auth', summary: 'Complete a sign-in method', who: 'anyone', body: anyObject, ok: [200, 'Signed in (or a second factor is needed)', AUTH_OR_FACTOR], errors: [400, 401, 403, 404, 409, 429] }],
    ['get', `${C}/auth/magic-link/consume`, { tag: 'Auth', summary: 'Follow a mailed magic link', who: 'anyone', params: [{ name: 'token', in: 'query', required: true, schema: str }, { name: 'redirect', in: 'query', required: false, schema: str }], ok: [302, 'Signed in; redirected with cookies'], errors: [400, 403, 404] }],
    ['post', `${C}/auth/two-factor/{action}`, { tag: 'Auth', summary: 'A two-factor action', who: 'a pending sign-in or management token', body: anyObject, ok: [200, 'The action\'s answer (204 for remove)', anyObject], errors: [400, 401, 403, 404, 409, 429] }],
    ['get', `${C}/auth-methods`, { tag: 'Auth', summary: 'The collection\'s sign-in methods (PocketBase SDK)', who: 'anyone', ok: [200, 'The methods', obj({ password: anyObject, oauth2: anyObject, otp: anyObject, mfa: anyObject })], errors: [404] }],
    ['post', `${C}/auth-with-oauth2`, { tag: 'Auth', summary: 'OAuth2 sign-in (PocketBase SDK)', who: 'anyone', body: obj({ provider: str, code: str, codeVerifier: str, redirectURL: str, createData: anyObject }, ['provider', 'code', 'codeVerifier', 'redirectURL']), ok: [200, 'Signed in', AUTH_OR_FACTOR], errors: [400, 403, 404, 409, 429] }],
    ['post', `${C}/request-otp`, { tag: 'Auth', summary: 'Mail a one-time code (PocketBase SDK)', who: 'anyone', body: ref('Email'), ok: [200, 'The sealed request', obj({ otpId: str })], errors: [400, 404, 429] }],
    ['post', `${C}/auth-with-otp`, { tag: 'Auth', summary: 'Sign in with a mailed code (PocketBase SDK)', who: 'anyone', body: obj({ otpId: str, password: str }), ok: [200, 'Signed in', AUTH_OR_FACTOR], errors: [400, 404, 429] }],
    ['post', `${C}/impersonate/{id}`, { tag: 'Auth', summary: 'A token for a record, without cookies', who: su, body: obj({ duration: int }, []), ok: [200, 'The record\'s token', AUTH_ANSWER], errors: [400, 401, 403, 404] }],
    ['post', `${C}/request-email-change`, { tag: 'Auth', summary: 'Mail a change-of-address token to the new address', who: 'the signed-in record', body: obj({ newEmail: str }), ok: [204, 'Queued'], errors: [400, 401, 404, 429] }],
    ['post', `${C}/confirm-email-change`, { tag: 'Auth', summary: 'Confirm a change of address', who: 'anyone with the token and the password', body: obj({ token: str, password: str }), ok: [204, 'Changed; every session ended'], errors: [400, 404, 409] }],
    ['post', '/api/files/token', { tag: 'Files', summary: 'A short-lived token for protected files', who: 'any signed-in record', ok: [200, 'The token', obj({ token: str })], errors: [401] }],
    ['get', '/api/files/{collection}/{recordId}/{filename}', { tag: 'Files', summary: 'Download a file (`?thumb=WxH`, `?token=`, ranges)', who: 'the view rule, or a file token', params: [{ name: 'thumb', in: 'query', required: false, schema: str }, { name: 'token', in: 'query', required: false, schema: str }, { name: 'download', in: 'query', required: false, schema: str }], ok: [200, 'The file\'s bytes (206 for a range, 304 unchanged)'], errors: [400, 404] }],
    ['head', '/api/files/{collection}/{recordId}/{filename}', { tag: 'Files', summary: 'A file\'s headers', who: 'the view rule, or a file token', ok: [200, 'The file\'s headers'], errors: [404] }],
    ['get', '/api/realtime', { tag: 'Realtime', summary: 'Server-Sent Events (`Accept: text/event-stream`) or a WebSocket upgrade (docs/realtime.md)', who: 'anyone; events follow the view rules', ok: [200, 'An event stream; first event `PB_CONNECT` with `{clientId}`'], errors: [503] }],
    ['post', '/api/realtime', { tag: 'Realtime', summary: 'Set an event stream\'s subscriptions', who: 'the stream\'s client', body: obj({ clientId: str, subscriptions: { type: 'array', items: str } }), ok: [204, 'Subscriptions replaced'], errors: [400, 403, 404] }],
    ['get', '/api/realtime/metrics', { tag: 'Realtime', summary: 'Realtime counters', who: su, ok: [200, 'Connections, subscriptions, deliveries, drops', anyObject], errors: [401, 403] }],
    ['get', '/api/settings', { tag: 'Settings', summary: 'List settings', who: su, ok: [200, 'Every setting', obj({ items: { type: 'array', items: obj({ key: str, value: str, created: str, updated: str }) } })], errors: [401, 403] }],
    ['get', '/api/settings/{key}', { tag: 'Settings', summary: 'Read a setting', who: su, ok: [200, 'The setting', obj({ key: str, value: str })], errors: [401, 403, 404] }],
    ['put', '/api/settings/{key}', { tag: 'Settings', summary: 'Write a setting', who: su, body: obj({ value: str }), ok: [200, 'The setting', obj({ key: str, value: str })], errors: [400, 401, 403] }],
    ['delete', '/api/settings/{key}', { tag: 'Settings', summary: 'Delete a setting', who: su, ok: [204, 'Deleted'], errors: [401, 403, 404] }],
    ['get', '/api/_/mail', { tag: 'Settings', summary: 'How mail is delivered (start-time configuration, no secret)', who: su, ok: [200, 'The mail settings', obj({ transport: { enum: ['smtp', 'command', 'log', 'plugin'] }, source: { enum: ['environment', 'app'] }, from: str, smtp: { anyOf: [obj({ host: str, port: int, tls: str, username: str, passwordSet: bool }), { type: 'null' }] }, variables: { type: 'array', items: str } })], errors: [401, 403] }],
    ['post', '/api/settings/test/email', { tag: 'Settings', summary: 'Send a test message through the mail transport', who: su, body: obj({ email: str, template: { enum: ['verification', 'password-reset', 'email-change', 'otp'] } }, ['email']), ok: [204, 'The transport took the message'], errors: [400, 401, 403, 502] }],
    ['get', '/api/_/storage', { tag: 'Settings', summary: 'Where stored files live (start-time configuration, no secret)', who: su, ok: [200, 'The storage settings', obj({ kind: { enum: ['local', 's3'] }, path: str, bucket: str, prefix: str, endpoint: { type: ['string', 'null'] }, region: str, forcePathStyle: bool, credentials: { enum: ['keys', 'sdk-chain'] }, variables: { type: 'array', items: str } }, ['kind', 'variables'])], errors: [401, 403] }],
    ['get', '/api/features', { tag: 'Settings', summary: 'Declared flags and experiments', who: su, ok: [200, 'The registry', obj({ flags: { type: 'array' }, experiments: { type: 'array' } })], errors: [401, 403] }],
    ['get', '/api/state', { tag: 'Settings', summary: 'Flags and experiment variants for a subject', who: 'anyone', params: [{ name: 'subject', in: 'query', required: false, schema: str }], ok: [200, 'The state', obj({ flags: anyObject, experiments: anyObject })] }],
  ];
}

/** A value shape as a JSON Schema; `form`: a file is an uploaded part, else its stored name. */
function shapeSchema(s: ValueShape, form: boolean): Json {
  const scalar: Record<ShapeScalar, Json> = {
    string: { type: 'string' }, number: { type: 'number' }, boolean: { type: 'boolean' },
    date: { type: 'string', description: 'A date: `2024-01-02 03:04:05.678Z`' },
    recordId: { type: 'string', pattern: '^[a-z0-9]{15}$' }, fileName: { type: 'string' },
    decimal: { type: 'string', description: 'An exact decimal' }, decimalInput: { type: ['string', 'number'] },
    file: form ? { type: 'string', contentMediaType: 'application/octet-stream' } : { type: 'string', description: 'A stored file name' },
    any: {},
  };
  let el: Json = { ...scalar[s.scalar] };
  if (s.values) el.enum = [...s.values];
  if (s.array) el = { type: 'array', items: el };
  if (s.nullable && el.type !== undefined) {
    const types = Array.isArray(el.type) ? el.type : [el.type];
    el = { ...el, type: [...types, 'null'] };
    if (Array.isArray(el.enum)) el.enum = [...el.enum, null];
  }
  return el;
}

function properties(fields: ShapedField[], form: boolean): Record<string, Json> {
  const out: Record<string, Json> = {};
  for (const p of fields) out[p.name] = shapeSchema(p.shape, form);
  return out;
}

const RULE_OF: Record<string, RuleName> = { list: 'listRule', view: 'viewRule', create: 'createRule', update: 'updateRule', delete: 'deleteRule' };

/** Who a rule lets in, in words. */
function ruleWho(rule: string | null): string {
  if (rule === null || rule.trim() === '') return 'superusers only (the rule is locked)';
  if (rule.trim() === '@public') return 'anyone (`@public`)';
  return 'callers the rule lets in (superusers always)';
}

/** The component schemas and paths of one collection (`stem`: its schema name stem). */
function collectionPart(c: Collection, stem: string, showRules: boolean): { schemas: Record<string, Json>; paths: Record<string, Json> } {
  const answer = answerFields(c);
  const base: Record<string, Json> = {
    collectionId: { type: 'string', const: c.id }, collectionName: { type: 'string', const: c.name },
    id: ref('RecordId'), created: ref('IsoDate'), updated: ref('IsoDate'),
  };
  const extras: Record<string, Json> = { expand: { type: 'object', description: 'the records `?expand=` embedded, by relation field' } };
  if (c.type === 'auth') extras.externalAuths = { type: 'array', items: obj({ provider: str, providerId: str }), description: 'the OAuth2 links: views by the record itself and superusers, sign-in answers' };
  const record = obj({ ...base, ...properties(answer, false), ...extras }, [...Object.keys(base), ...answer.filter((p) => !p.optional).map((p) => p.name)], {
    additionalProperties: false,
    description: `A record of \`${c.name}\` as the API answers it (hidden fields left out; \`?fields=\` answers a subset).`,
  });
  const create = createFields(c);
  const update = create.filter((p) => p.name !== 'id');
  const updateExtra: Record<string, Json> = c.type === 'auth' ? { oldPassword: { type: 'string', description: 'needed to change `password` unless the caller is a superuser' } } : {};
  const hasFiles = c.fields.some((f) => f.type === 'file');
  const schemas: Record<string, Json> = {
    [`${stem}Record`]: record,
    [`${stem}Create`]: obj(properties(create, false), create.filter((p) => !p.optional).map((p) => p.name), { description: `What a create of \`${c.name}\` accepts as JSON.` }),
    [`${stem}Update`]: obj({ ...properties(update, false), ...updateExtra }, [], { description: `What an update of \`${c.name}\` accepts as JSON: any of the create's fields but \`id\`.` }),
  };
  if (hasFiles) {
    const formNote = 'Other fields as form fields or in a `@jsonPayload` JSON part; a file field takes one part per file.';
    schemas[`${stem}CreateForm`] = obj({ ...properties(create, true), '@jsonPayload': str }, [], { description: `A multipart create of \`${c.name}\`. ${formNote}` });
    schemas[`${stem}UpdateForm`] = obj({ ...properties(update, true), '@jsonPayload': str }, [], { description: `A multipart update of \`${c.name}\`: \`<file>+\` appends, \`<file>-\` removes names. ${formNote}` });
  }
  const rule = (op: string): Pick<Op, 'who' | 'rule'> => {
    const text = c[RULE_OF[op]!];
    return showRules ? { who: ruleWho(text), rule: text } : { who: ruleWho(text) };
  };
  const tag = c.name;
  const list = `/api/collections/${c.name}/records`;
  const one = `${list}/{id}`;
  const paths: Record<string, Json> = {
    [list]: {
      get: operation(list, 'get', { tag, summary: `List ${c.name} records`, ...rule('list'), params: paramRefs(LIST_PARAMS), ok: [200, 'A page', listPage(ref(`${stem}Record`))], errors: [400, 403, 410], operationId: `list${stem}Records` }),
      post: operation(list, 'post', { tag, summary: `Create a ${c.name} record`, ...rule('create'), params: paramRefs(VIEW_PARAMS), body: ref(`${stem}Create`), ...(hasFiles ? { multipart: ref(`${stem}CreateForm`) } : {}), ok: [201, 'The record', ref(`${stem}Record`)], errors: [400, 403, 409, 413], operationId: `create${stem}Record` }),
    },
    [one]: {
      get: operation(one, 'get', { tag, summary: `View a ${c.name} record`, ...rule('view'), params: paramRefs(VIEW_PARAMS), ok: [200, 'The record', ref(`${stem}Record`)], errors: [400, 404], operationId: `view${stem}Record` }),
      patch: operation(one, 'patch', { tag, summary: `Update a ${c.name} record`, ...rule('update'), params: paramRefs(VIEW_PARAMS), body: ref(`${stem}Update`), ...(hasFiles ? { multipart: ref(`${stem}UpdateForm`) } : {}), ok: [200, 'The record', ref(`${stem}Record`)], errors: [400, 404, 409, 413], operationId: `update${stem}Record` }),
      delete: operation(one, 'delete', { tag, summary: `Delete a ${c.name} record`, ...rule('delete'), ok: [204, 'Deleted'], errors: [404], operationId: `delete${stem}Record` }),
    },
  };
  if (c.type === 'auth') {
    const signIn = `/api/collections/${c.name}/auth-with-password`;
    const signed = { anyOf: [obj({ token: str, record: ref(`${stem}Record`) }, ['token', 'record'], { additionalProperties: true }), ref('SecondFactorRequired')] };
    paths[signIn] = { post: operation(signIn, 'post', { tag, summary: `Sign in to ${c.name} with a password`, who: 'anyone', body: ref('Identity'), ok: [200, 'Signed in (or a second factor is needed)', signed], errors: [400, 403, 404, 429], operationId: `authWithPassword${stem}` }) };
    const refresh = `/api/collections/${c.name}/auth-refresh`;
    paths[refresh] = { post: operation(refresh, 'post', { tag, summary: `Refresh a ${c.name} token`, who: `a signed-in record of ${c.name}`, ok: [200, 'Signed in', obj({ token: str, record: ref(`${stem}Record`) }, ['token', 'record'], { additionalProperties: true })], errors: [401, 403], operationId: `authRefresh${stem}` }) };
  }
  return { schemas, paths };
}

/** A route table pattern as an OpenAPI path: `:name` → `{name}`; null for wildcard and admin UI routes. */
function openApiPath(pattern: string): string | null {
  if (pattern.includes('*') || !pattern.startsWith('/api/')) return null;
  return pattern.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, '{$1}');
}

/** The path template with every parameter renamed alike, to compare paths whose parameters are named differently. */
const pathKey = (path: string): string => path.replace(/\{[^}]+\}/g, '{}');

/** Builds the document (a fresh object each call). */
export function buildOpenApi(input: OpenApiInput): Json {
  const schemas = baseSchemas();
  const paths: Record<string, Record<string, Json>> = {};
  const described = new Set<string>();
  const add = (method: string, path: string, op: Json): void => {
    (paths[path] ??= {})[method] = op;
    described.add(`${method} ${pathKey(path)}`);
  };
  // a fixed route is described only where the table serves it (an app may move or drop /api/state)
  const table = input.routes.flatMap((r) => {
    const path = openApiPath(r.pattern);
    return path ? [{ method: r.method === 'del' ? 'delete' : r.method, path }] : [];
  });
  const served = new Set(table.map((r) => `${r.method} ${pathKey(r.path)}`));
  for (const [method, path, op] of fixedOperations()) {
    if (served.has(`${method === 'head' ? 'get' : method} ${pathKey(path)}`)) add(method, path, operation(path, method, op));
  }
  const tags: Json[] = ['Probes', 'Install', 'Collections', 'Records', 'Batch', 'Auth', 'Files', 'Realtime', 'Settings'].map((name) => ({ name }));
  const list = input.collections.slice().sort((a, b) => a.name.localeCompare(b.name));
  const stems = collectionStems(list);
  for (const c of list) {
    const part = collectionPart(c, stems.get(c.id)!, input.showRules);
    Object.assign(schemas, part.schemas);
    for (const [path, item] of Object.entries(part.paths)) for (const [m, op] of Object.entries(item)) add(m, path, op as Json);
    tags.push({ name: c.name, description: `The ${c.type} collection \`${c.name}\`` });
  }
  // the rest of the route table (an app's routes and capabilities): listed, not described
  for (const { method, path } of table) {
    if (!['get', 'post', 'put', 'patch', 'delete', 'head'].includes(method) || described.has(`${method} ${pathKey(path)}`)) continue;
    add(method, path, operation(path, method, { tag: 'Other', summary: `${method.toUpperCase()} ${path}`, who: 'see docs/api.md', ok: [200, 'Success'], errors: [400, 401, 403, 404] }));
    if (!tags.some((t) => t.name === 'Other')) tags.push({ name: 'Other', description: 'Routes of the server\'s table this document lists without describing (an app\'s routes, optional capabilities)' });
  }
  const responses: Record<string, Json> = {};
  for (const [status, description] of Object.entries(ERROR_RESPONSES)) responses[`E${status}`] = { description, content: jsonContent(ref('Error')) };
  return {
    openapi: '3.1.0',
    info: { title: 'svc API', version: input.version, description: 'The REST API of this svc server (docs/api.md). Regenerated when collections change.' },
    servers: [{ url: '/' }],
    security: [{}, { bearerAuth: [] }, { cookieAuth: [] }],
    tags,
    paths,
    components: {
      schemas,
      responses,
      parameters: parameters(),
      securitySchemes: {
        bearerAuth: { type: 'http', scheme: 'bearer', description: 'A token from a sign-in (`Authorization: Bearer <token>`; the raw token works too).' },
        cookieAuth: { type: 'apiKey', in: 'cookie', name: 'svc_auth', description: 'The sign-in cookie; unsafe methods also need `X-CSRF-Token: <svc_csrf>`.' },
      },
    },
  };
}
