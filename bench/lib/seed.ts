/**
 * The benchmark data set (the published PocketBase benchmark's shape), created through the real
 * server's REST API: a `users` auth collection with N users, and `posts`-shaped collections
 * (title, a ~480-character description, a `public` bool, a two-value multi-select `tags`, an
 * `author` relation to users) with deterministic record ids, so wrk scripts can address any row
 * without a lookup.
 *
 * Rule presets (`open`, `owner`) are switched with a PATCH of the collection, so one seeded table
 * serves the scenarios with and without an access rule.
 */
import { SvcClient as FastClient } from '../../examples/cities/client.js';
import { SvcClient } from './svc.js';

/** Password of every seeded user. */
export const USER_PASSWORD = 'bench-user-password-1';
/** Values of the `tags` multi-select; every post holds two of them. */
export const TAGS = ['news', 'tech', 'life', 'sport'] as const;

/** Id of seeded user `i` (15 characters). */
export const userId = (i: number): string => `benchuser${String(i).padStart(6, '0')}`;
/** E-mail of seeded user `i`. */
export const userEmail = (i: number): string => `user${i}@bench.test`;
/** Id of post `i` of the set whose one-letter prefix is `set` (15 characters: `post` + set + 10 digits). */
export const postId = (set: string, i: number): string => `post${set}${String(i).padStart(10, '0')}`;
/** Index of the author of post `i` among `users` users. */
export const authorOf = (i: number, users: number): number => (i * 7919) % users;

const FILLER =
  'Benchmarks measure what they measure and nothing more: a request served from memory on a quiet ' +
  'machine says little about a busy one, so every figure here is a ratio to a reference taken in ' +
  'the same run. This description is long enough to make the record a realistic size for a blog ' +
  'post summary, with a title, a visibility flag, two tags and an author, like the published ' +
  'benchmark this suite copies. Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod.';

/** The ~480-character description of post `i`. */
export function description(i: number): string {
  return `${FILLER.slice(0, 470)} #${i}`;
}

/** The JSON body that creates post `i` of set `set`. */
export function postBody(set: string, i: number, users: number): Record<string, unknown> {
  return {
    id: postId(set, i),
    title: `Post ${i}: notes on benchmark ${set}`,
    description: description(i),
    public: i % 2 === 0,
    tags: [TAGS[i % 4], TAGS[(i + 1) % 4]],
    author: userId(authorOf(i, users)),
  };
}

/** Access-rule presets of the posts collections. */
export const RULES = {
  /** scenarios 1, 3, 5, 6, 8: anyone may list and view; signed-in users create and update; authors delete */
  open: {
    listRule: '@public',
    viewRule: '@public',
    createRule: "@request.auth.id != ''",
    updateRule: "@request.auth.id != ''",
    deleteRule: 'author = @request.auth.id',
  },
  /** scenarios 2 and 4: only the author views; the list shows public posts and one's own */
  owner: {
    listRule: 'public = true || author = @request.auth.id',
    viewRule: 'author = @request.auth.id',
    createRule: "@request.auth.id != ''",
    updateRule: "@request.auth.id != ''",
    deleteRule: 'author = @request.auth.id',
  },
} as const;
export type RulePreset = keyof typeof RULES;

/** Creates the `users` auth collection (no public rules; superusers create the users). */
export async function createUsersCollection(su: SvcClient): Promise<string> {
  const c = await su.request<{ id: string }>('POST', '/api/collections', {
    name: 'users',
    type: 'auth',
    fields: [{ name: 'name', type: 'text' }],
    listRule: null,
    viewRule: null,
    createRule: null,
    updateRule: null,
    deleteRule: null,
  });
  return c.id;
}

/** Creates a posts-shaped collection `name` with indexes on `public` and `author`. */
export async function createPostsCollection(su: SvcClient, name: string, usersId: string, preset: RulePreset): Promise<void> {
  await su.request('POST', '/api/collections', {
    name,
    type: 'base',
    fields: [
      { name: 'title', type: 'text' },
      { name: 'description', type: 'text' },
      { name: 'public', type: 'bool' },
      { name: 'tags', type: 'select', options: { values: [...TAGS], maxSelect: 2 } },
      { name: 'author', type: 'relation', options: { collectionId: usersId, maxSelect: 1 } },
    ],
    indexes: [
      { name: `${name}_public`, fields: ['public'] },
      { name: `${name}_author`, fields: ['author'] },
    ],
    ...RULES[preset],
  });
}

/** Switches the rules of collection `name` to `preset` (a metadata-only PATCH). */
export async function setRules(su: SvcClient, name: string, preset: RulePreset): Promise<void> {
  await su.request('PATCH', `/api/collections/${name}`, { ...RULES[preset] });
}

/** Runs `work(i)` for i in [from, to) with `concurrency` workers. */
async function pool(from: number, to: number, concurrency: number, work: (i: number) => Promise<unknown>): Promise<void> {
  let next = from;
  const worker = async (): Promise<void> => {
    while (next < to) await work(next++);
  };
  await Promise.all(Array.from({ length: Math.max(1, concurrency) }, worker));
}

/** Creates users 0..count-1 (password hashing bounds the rate: a few hundred per second). */
export async function seedUsers(baseUrl: string, suToken: string, count: number): Promise<void> {
  const client = new FastClient(baseUrl, 8);
  client.token = suToken;
  try {
    await pool(0, count, 8, (i) =>
      client.request('POST', '/api/collections/users/records', {
        id: userId(i),
        email: userEmail(i),
        password: USER_PASSWORD,
        passwordConfirm: USER_PASSWORD,
        name: `Bench user ${i}`,
      }),
    );
  } finally {
    client.close();
  }
}

/**
 * Creates posts [from, to) of set `set` in `collection` as the superuser, over `concurrency`
 * keep-alive connections. Resolves with the rate achieved (records/s).
 */
export async function seedPosts(
  baseUrl: string,
  suToken: string,
  collection: string,
  set: string,
  from: number,
  to: number,
  users: number,
  concurrency = 64,
): Promise<number> {
  const client = new FastClient(baseUrl, concurrency);
  client.token = suToken;
  const t0 = performance.now();
  try {
    await pool(from, to, concurrency, (i) => client.request('POST', `/api/collections/${collection}/records`, postBody(set, i, users)));
  } finally {
    client.close();
  }
  return ((to - from) * 1000) / (performance.now() - t0);
}

/** Signs user `i` in and returns the bearer token. */
export async function userToken(baseUrl: string, i: number): Promise<string> {
  const c = new SvcClient(baseUrl);
  const r = await c.request<{ token: string }>('POST', '/api/collections/users/auth-with-password', {
    identity: userEmail(i),
    password: USER_PASSWORD,
  });
  return r.token;
}

/** Id of post `i` of {@link seedReadPosts}: `benchpost` and six digits (15 characters). */
export const readPostId = (i: number): string => `benchpost${String(i).padStart(6, '0')}`;

/**
 * The record-read benchmarks' data (bench/read-by-id.ts, bench/node-engine.ts): a `posts`
 * collection (`title`, `body` text fields; `@public` list and view, writes superuser-only) and
 * `count` posts with ids {@link readPostId}, post i's body one to three sentences (1 + i % 3),
 * created 16 at a time through the REST API as the superuser.
 */
export async function seedReadPosts(baseUrl: string, email: string, password: string, count: number): Promise<void> {
  const client = new SvcClient(baseUrl);
  await client.loginSuperuser(email, password);
  await client.request('POST', '/api/collections', {
    name: 'posts',
    type: 'base',
    fields: [
      { name: 'title', type: 'text', options: {} },
      { name: 'body', type: 'text', options: {} },
    ],
    listRule: '@public',
    viewRule: '@public',
    createRule: null,
    updateRule: null,
    deleteRule: null,
  });
  const paragraph =
    'A record of moderate size, about the length of a short blog post summary, so the ' +
    'response is not trivially small compared with the hello-world body. ';
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count) {
      const i = next++;
      await client.request('POST', '/api/collections/posts/records', { id: readPostId(i), title: `Post number ${i}`, body: paragraph.repeat(1 + (i % 3)) });
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
}
