/**
 * Micro benchmarks (tinybench) of the per-request hot pieces of svc, each reported as ops/s and
 * as a ratio to a baseline measured in the same process right next to it:
 *
 * | piece                              | baseline                                         |
 * |------------------------------------|--------------------------------------------------|
 * | filter parse + compile (cold)      | JSON.parse of the same expression's tree as JSON |
 * | filter compile (parsed tree cached)| same                                             |
 * | the same two for a filter of PocketBase's forms (modifiers, any-of, macros) | same |
 * | binding that filter for a request (bindParams)     | same                                             |
 * | the same two for a filter joining another collection and reading a back-relation | same |
 * | the first filter with a new literal per call: compiled per shape (compileFilter) or per text, and bound | same |
 * | rule check (RuleBook.check + bind) | JSON.stringify of one post record                |
 * | record serialization (codec)       | JSON.stringify of the same record / list page    |
 * | JWT verify, uncached and cached    | one HMAC-SHA256 of the token's signing input     |
 * | cursor encode / decode             | base64url(JSON) of the same boundary / its parse |
 *
 * Every task runs a batch of calls per sample so timer overhead stays negligible.
 * Runs standalone too: `npx tsx bench/micro.ts [--quick]`.
 */
import { createHmac } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { Bench } from 'tinybench';
import { CollectionRegistry } from '../src/collections/collection-registry.js';
import { RuleBook, type Principal } from '../src/rules/access.js';
import { bindParams, compileExpression, compileFilter, filterCache } from '../src/rules/compiler.js';
import { parseFilter } from '../src/rules/parser.js';
import { buildCodec } from '../src/records/record-codec.js';
import * as sqliteJson from '../src/store/sqlite/record-json.js';
import { TokenService } from '../src/auth/tokens.js';
import { normalizeFieldDefinition } from '../src/collections/fields/index.js';
import { authSystemFields } from '../src/model/auth-schema.js';
import type { Collection, Field } from '../src/model/schema.js';
import { RULES, TAGS, description, postId, userId } from './lib/seed.js';

/** One micro benchmark line. */
export interface MicroResult {
  name: string;
  opsPerSec: number;
  baseline: string;
  baselineOpsPerSec: number;
  /** opsPerSec / baselineOpsPerSec */
  ratio: number;
  /** relative margin of error of the piece's samples, % */
  rme: number;
}

const BATCH = 200;

function fields(defs: unknown[]): Field[] {
  const ids = new Set<string>();
  return defs.map((d) => {
    const r = normalizeFieldDefinition(d, ids);
    if (!('field' in r)) throw new Error(`bad field ${JSON.stringify(d)}: ${JSON.stringify(r.errors)}`);
    ids.add(r.field.id);
    return r.field;
  });
}

function collection(id: string, name: string, type: 'base' | 'auth', fs: Field[], rules: Partial<Collection>): Collection {
  return {
    id, name, type, system: false, fields: fs, indexes: [], options: {},
    listRule: null, viewRule: null, createRule: null, updateRule: null, deleteRule: null,
    created: '2026-01-01 00:00:00.000Z', updated: '2026-01-01 00:00:00.000Z', ...rules,
  };
}

/**
 * The benchmark's schema in memory: `users` and a `posts` collection under the owner rules, and
 * for the join and back-relation tasks `memberships` (user, role) and `comments` (post, message),
 * each viewable by its own author only.
 */
function schema(): { registry: CollectionRegistry; users: Collection; posts: Collection } {
  const users = collection('benchusers0000c', 'users', 'auth', [...authSystemFields(), ...fields([{ name: 'name', type: 'text' }])], {});
  const posts = collection('benchposts0000c', 'posts', 'base', fields([
    { name: 'title', type: 'text' },
    { name: 'description', type: 'text' },
    { name: 'public', type: 'bool' },
    { name: 'tags', type: 'select', options: { values: [...TAGS], maxSelect: 2 } },
    { name: 'author', type: 'relation', options: { collectionId: users.id, maxSelect: 1 } },
  ]), { ...RULES.owner });
  const registry = new CollectionRegistry();
  registry.put(users);
  registry.put(posts);
  registry.put(collection('benchmembers00c', 'memberships', 'base', fields([
    { name: 'user', type: 'relation', options: { collectionId: users.id, maxSelect: 1 } }, { name: 'role', type: 'text' },
  ]), { viewRule: 'user = @request.auth.id' }));
  registry.put(collection('benchcomments0c', 'comments', 'base', fields([
    { name: 'post', type: 'relation', options: { collectionId: posts.id, maxSelect: 1 } }, { name: 'message', type: 'text' },
    { name: 'author', type: 'relation', options: { collectionId: users.id, maxSelect: 1 } },
  ]), { viewRule: 'author = @request.auth.id' }));
  return { registry, users, posts };
}

/** Runs every micro benchmark; `timeMs` is tinybench's time budget per task. */
export async function runMicro(timeMs = 300): Promise<MicroResult[]> {
  const { registry, users, posts } = schema();
  const codec = buildCodec(posts, sqliteJson); // the SQLite store's record columns
  const row = [postId('a', 42), '2026-11-23 04:01:50.404Z', '2026-11-23 04:01:50.404Z', 'Post 42: notes on benchmark a',
    description(42), 1n, JSON.stringify([TAGS[2], TAGS[3]]), userId(7)];
  const record = codec.fromRow(row);
  const page = { page: 1, perPage: 20, totalItems: 10000, totalPages: 500, items: Array.from({ length: 20 }, () => codec.fromRow(row)) };

  const rules = new RuleBook(registry);
  const principal: Principal = { superuser: false, collection: users, record: { id: userId(7), email: 'user7@bench.test', verified: false, name: 'Bench user 7' } };
  const filterSrc = 'title ~ "bench" && (public = true || author = @request.auth.id) && created > "2024-01-01"';
  const treeJson = JSON.stringify(parseFilter(filterSrc));
  let cold = 0;
  // the same shape with PocketBase's forms (docs/rules.md): a modifier, an any-of operator on a
  // multi-valued field, an item count, a datetime and a query macro
  const pbSrc = 'title:lower ~ "bench" && (public = true || author = @request.auth.id) && tags ?!= "x" && tags:length > 0 && created > @yesterday && @request.query.q != ""';
  const pbCompiled = compileExpression(pbSrc, posts, registry, { mode: 'filter', alias: 'r' });
  const pbCtx = { auth: principal.record, data: null, method: 'GET', request: { method: 'GET', query: 'q=bench&page=2' }, context: 'default' as const };

  const secret = Buffer.alloc(32, 7);
  const tokens = new TokenService(secret);
  const tokenKey = 'benchtokenkey0000000000000000000';
  const { token } = await tokens.issue(users.id, userId(7), tokenKey, 0);
  const signingInput = token.slice(0, token.lastIndexOf('.'));
  const verifiedCache = (tokens as unknown as { verified: Map<string, unknown> }).verified;

  let cursor: typeof import('../src/records/cursor.js') | null = null;
  try {
    cursor = await import('../src/records/cursor.js');
  } catch {
    cursor = null; // not written yet: reported as pending
  }

  const bench = new Bench({ time: timeMs, warmupTime: Math.min(100, timeMs), iterations: 8 });
  const add = (name: string, fn: () => unknown): void => {
    bench.add(name, () => {
      for (let i = 0; i < BATCH; i++) fn();
    });
  };
  const addAsync = (name: string, fn: () => Promise<unknown>): void => {
    bench.add(name, async () => {
      for (let i = 0; i < BATCH; i++) await fn();
    });
  };
  const pairs: Array<[string, string]> = [];
  const pair = (piece: string, baseline: string): void => void pairs.push([piece, baseline]);

  add('baseline: JSON.parse(filter tree)', () => JSON.parse(treeJson));
  add('filter parse + compile (cold)', () =>
    compileExpression(`${filterSrc} && title != "x${cold++}"`, posts, registry, { mode: 'filter', alias: 'r' }));
  add('filter compile (parsed tree cached)', () => compileExpression(filterSrc, posts, registry, { mode: 'filter', alias: 'r' }));
  pair('filter parse + compile (cold)', 'baseline: JSON.parse(filter tree)');
  pair('filter compile (parsed tree cached)', 'baseline: JSON.parse(filter tree)');

  add('baseline: JSON.stringify(record)', () => JSON.stringify(record));
  add('rule check (list rule, bound for a user)', () => rules.check(posts, 'listRule', principal, null, 'GET'));
  add('record serialization (codec.stringify)', () => codec.stringify(record));
  add('row decode + serialization (fromRow + stringify)', () => codec.stringify(codec.fromRow(row)));
  pair('rule check (list rule, bound for a user)', 'baseline: JSON.stringify(record)');
  pair('record serialization (codec.stringify)', 'baseline: JSON.stringify(record)');
  pair('row decode + serialization (fromRow + stringify)', 'baseline: JSON.stringify(record)');
  add('baseline: JSON.stringify(list page of 20)', () => JSON.stringify(page));
  add('list page serialization (codec.stringifyList, 20 items)', () => codec.stringifyList(page));
  pair('list page serialization (codec.stringifyList, 20 items)', 'baseline: JSON.stringify(list page of 20)');

  add('baseline: HMAC-SHA256 (node:crypto)', () => createHmac('sha256', secret).update(signingInput).digest());
  addAsync('JWT verify (uncached)', () => {
    verifiedCache.clear();
    return tokens.verify(token, tokenKey);
  });
  add('JWT verify (cached)', () => tokens.cached(token, tokenKey));
  pair('JWT verify (uncached)', 'baseline: HMAC-SHA256 (node:crypto)');
  pair('JWT verify (cached)', 'baseline: HMAC-SHA256 (node:crypto)');

  if (cursor) {
    const boundary = { keys: ['2026-11-23 04:01:50.404Z', postId('a', 42)], id: postId('a', 42) };
    const wire = { h: 'AAAAAAAAAAAAAAAA', d: 'n', k: boundary.keys };
    const plain = new cursor.CursorCodec('stateless', null, 0, null);
    const signed = new cursor.CursorCodec('signed', secret, 0, null);
    const binding = cursor.bindingHash(['benchposts0000c', '-created,id', '', '']);
    const plainToken = (await plain.issue(binding, boundary, null)).next!;
    const signedToken = (await signed.issue(binding, boundary, null)).next!;
    const wireB64 = Buffer.from(JSON.stringify(wire)).toString('base64url');
    add('baseline: base64url(JSON.stringify(boundary))', () => Buffer.from(JSON.stringify(wire)).toString('base64url'));
    add('baseline: JSON.parse(base64url decode)', () => JSON.parse(Buffer.from(wireB64, 'base64url').toString('utf8')));
    addAsync('cursor encode (stateless)', () => plain.issue(binding, boundary, null));
    addAsync('cursor encode (signed)', () => signed.issue(binding, boundary, null));
    add('cursor decode (stateless)', () => plain.read(plainToken));
    add('cursor decode (signed)', () => signed.read(signedToken));
    pair('cursor encode (stateless)', 'baseline: base64url(JSON.stringify(boundary))');
    pair('cursor encode (signed)', 'baseline: base64url(JSON.stringify(boundary))');
    pair('cursor decode (stateless)', 'baseline: JSON.parse(base64url decode)');
    pair('cursor decode (signed)', 'baseline: JSON.parse(base64url decode)');
  }

  // last, so the tasks above run as before they were added (bench/README.md, "Micro benchmarks")
  add('PocketBase-form filter parse + compile (cold)', () =>
    compileExpression(`${pbSrc} && title != "x${cold++}"`, posts, registry, { mode: 'filter', alias: 'r' }));
  add('PocketBase-form filter compile (parsed tree cached)', () => compileExpression(pbSrc, posts, registry, { mode: 'filter', alias: 'r' }));
  add('PocketBase-form filter bind (bindParams)', () => bindParams(pbCompiled, pbCtx));
  pair('PocketBase-form filter parse + compile (cold)', 'baseline: JSON.parse(filter tree)');
  pair('PocketBase-form filter compile (parsed tree cached)', 'baseline: JSON.parse(filter tree)');
  pair('PocketBase-form filter bind (bindParams)', 'baseline: JSON.parse(filter tree)');

  // a join of another collection (one alias, two terms: one EXISTS) and a back-relation, both
  // carrying the joined collection's view rule as a client filter does (docs/rules.md)
  const joinSrc = 'title ~ "bench" && @collection.memberships:m.user ?= @request.auth.id && @collection.memberships:m.role = "editor" && comments_via_post.message ?~ "bench"';
  add('join + back-relation filter parse + compile (cold)', () =>
    compileExpression(`${joinSrc} && title != "x${cold++}"`, posts, registry, { mode: 'filter', alias: 'r' }));
  add('join + back-relation filter compile (parsed tree cached)', () => compileExpression(joinSrc, posts, registry, { mode: 'filter', alias: 'r' }));
  pair('join + back-relation filter parse + compile (cold)', 'baseline: JSON.parse(filter tree)');
  pair('join + back-relation filter compile (parsed tree cached)', 'baseline: JSON.parse(filter tree)');

  // the first filter with a new literal each call (a list whose filter carries a value the client
  // chose): one compiled shape bound per text, against compiling each text (docs/rules.md, "Filters")
  const shapes = filterCache(100);
  const varied = (): string => `${filterSrc} && title != "x${cold++}"`;
  const filterOpts = { mode: 'filter', alias: 'r' } as const;
  add('varied-literal filter, shape cached (compileFilter + bind)', () => {
    const f = compileFilter(varied(), posts, registry, filterOpts, shapes, 'bench');
    return bindParams(f.expr, pbCtx, f.literals);
  });
  add('varied-literal filter, compiled per text (+ bind)', () => bindParams(compileExpression(varied(), posts, registry, filterOpts), pbCtx));
  add('same filter text, shape cached (compileFilter + bind)', () => {
    const f = compileFilter(filterSrc, posts, registry, filterOpts, shapes, 'bench');
    return bindParams(f.expr, pbCtx, f.literals);
  });
  pair('varied-literal filter, shape cached (compileFilter + bind)', 'baseline: JSON.parse(filter tree)');
  pair('varied-literal filter, compiled per text (+ bind)', 'baseline: JSON.parse(filter tree)');
  pair('same filter text, shape cached (compileFilter + bind)', 'baseline: JSON.parse(filter tree)');

  await bench.run();
  const stats = new Map<string, { ops: number; rme: number }>();
  for (const t of bench.tasks) {
    const r = t.result;
    if (r.state === 'errored') throw new Error(`micro benchmark ${t.name} failed: ${r.error.message}`);
    if (r.state !== 'completed') throw new Error(`micro benchmark ${t.name} did not complete (${r.state})`);
    stats.set(t.name, { ops: (BATCH * 1000) / r.period, rme: r.latency.rme });
  }
  const out: MicroResult[] = pairs.map(([name, baseline]) => {
    const a = stats.get(name)!;
    const b = stats.get(baseline)!;
    return { name, opsPerSec: a.ops, baseline: baseline.replace(/^baseline: /, ''), baselineOpsPerSec: b.ops, ratio: a.ops / b.ops, rme: a.rme };
  });
  if (!cursor) out.push({ name: 'cursor encode/decode: pending (src/records/cursor.ts missing)', opsPerSec: NaN, baseline: '', baselineOpsPerSec: NaN, ratio: NaN, rme: NaN });
  return out;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const results = await runMicro(process.argv.includes('--quick') ? 100 : 300);
  for (const r of results) {
    console.log(`${r.name.padEnd(58)} ${r.opsPerSec.toFixed(0).padStart(12)} ops/s  ×${r.ratio.toFixed(3)} of ${r.baseline}`);
  }
}
