/**
 * The benchmark scenarios (the published PocketBase benchmark's list) as wrk loads against a
 * seeded svc server, plus the Fastify reference loads they are compared with.
 *
 * Every scenario names the rule preset its collection must carry (switched by a PATCH before it
 * runs, see seed.ts), so any scenario can be re-run alone, e.g. under a profiler.
 */
import { join } from 'node:path';
import { REPO_ROOT } from './svc.js';
import type { Load } from './measure.js';
import type { RulePreset } from './seed.js';
import { postId, userEmail, USER_PASSWORD } from './seed.js';
import { DEFAULT_HASH_THREADS } from '../../src/auth/passwords.js';

/** Connections of auth-with-password (7): two for every hashing thread (see below). */
const PASSWORD_CONNECTIONS = 2 * DEFAULT_HASH_THREADS;

const WRK_DIR = join(REPO_ROOT, 'bench', 'wrk');
/** Path of a Lua script in bench/wrk. */
export const wrkScript = (name: string): string => join(WRK_DIR, name);

/** What the loads need to know about the running servers and the seeded data. */
export interface ScenarioContext {
  svcUrl: string;
  fastifyUrl: string;
  /** connections of every load unless a scenario says otherwise */
  connections: number;
  /** seeded posts per set: set letter → (collection, rows) */
  sets: { a: { collection: string; rows: number }; b?: { collection: string; rows: number } };
  /** the signed-in user of the authenticated scenarios */
  user: { index: number; id: string; token: string };
  /** a post of set a whose author is `user` */
  ownPostId: string;
  /** collection that takes creates and deletes */
  writeCollection: string;
  /** the cities data (bench/lib/cities.ts), when loaded: country codes and rows */
  cities?: { codes: string[]; rows: number };
}

/** One svc scenario. */
export interface Scenario {
  key: string;
  /** the scenario number */
  number: number;
  label: string;
  kind: 'read' | 'write' | 'auth';
  /** rule presets to apply before running: collection → preset */
  rules: Record<string, RulePreset>;
  load: Load;
  /** a second load running at the same time (scenario 6) */
  secondary?: Load;
  /** key of the Fastify reference series this read is compared with */
  fastify?: string;
}

const records = (ctx: ScenarioContext, col: string): string => `${ctx.svcUrl}/api/collections/${col}/records`;
const bearer = (ctx: ScenarioContext): Record<string, string> => ({ Authorization: `Bearer ${ctx.user.token}` });

/** Get by id (1, 2). */
export function getByIdScenarios(ctx: ScenarioContext): Scenario[] {
  const a = ctx.sets.a.collection;
  return [
    {
      key: 's1-get', number: 1, label: 'get by id, @public view rule', kind: 'read', rules: { [a]: 'open' },
      load: { url: `${records(ctx, a)}/${postId('a', Math.floor(ctx.sets.a.rows / 2))}` }, fastify: 'f-get',
    },
    {
      key: 's2-get-auth', number: 2, label: 'get by id, rule author = @request.auth.id, bearer token', kind: 'read',
      rules: { [a]: 'owner' }, load: { url: `${records(ctx, ctx.sets.a.collection)}/${ctx.ownPostId}`, headers: bearer(ctx) }, fastify: 'f-get',
    },
  ];
}

/** List 20 (3) with totals and with skipTotal, per seeded set. */
export function listScenarios(ctx: ScenarioContext): Scenario[] {
  const out: Scenario[] = [];
  for (const info of Object.values(ctx.sets)) {
    if (!info) continue;
    const size = sizeLabel(info.rows);
    out.push(
      {
        key: `s3-list-${size}`, number: 3, label: `list 20, no rule, with totals (${size} rows)`, kind: 'read',
        rules: { [info.collection]: 'open' }, load: { url: `${records(ctx, info.collection)}?page=1&perPage=20` }, fastify: `f-list-${size}`,
      },
      {
        key: `s3-list-skip-${size}`, number: 3, label: `list 20, no rule, skipTotal (${size} rows)`, kind: 'read',
        rules: { [info.collection]: 'open' }, load: { url: `${records(ctx, info.collection)}?page=1&perPage=20&skipTotal=1` },
        fastify: `f-list-skip-${size}`,
      },
      {
        // every request a distinct query string: what a list costs when the page cache cannot answer
        key: `s3-list-skip-nocache-${size}`, number: 3, label: `list 20, no rule, skipTotal, page cache bypassed (${size} rows)`, kind: 'read',
        rules: { [info.collection]: 'open' },
        load: { url: `${records(ctx, info.collection)}?page=1&perPage=20&skipTotal=1`, script: wrkScript('distinct-query.lua') },
        fastify: `f-list-skip-${size}`,
      },
    );
  }
  return out;
}

/** List 20 under `public = true || author = @request.auth.id` (4), indexed, with totals. */
export function ruleListScenarios(ctx: ScenarioContext): Scenario[] {
  return Object.values(ctx.sets).flatMap((info) => {
    if (!info) return [];
    const size = sizeLabel(info.rows);
    return [{
      key: `s4-list-rule-${size}`, number: 4, label: `list 20, rule public = true || author = @request.auth.id, with totals (${size} rows)`,
      kind: 'read' as const, rules: { [info.collection]: 'owner' as RulePreset },
      load: { url: `${records(ctx, info.collection)}?page=1&perPage=20`, headers: bearer(ctx) }, fastify: `f-list-${size}`,
    }];
  });
}

/** Population thresholds the relation-filter series draws from (below most cities to above all but a few hundred). */
export const CITY_THRESHOLDS = [0, 1000, 1500, 5000, 10000, 50000, 100000, 500000];

/**
 * Lists over the 135,233 cities (group 10), every query string new (bench/wrk/cities-lists.lua,
 * distinct-query.lua), so the page cache never answers: a relation filter with an indexed sort
 * and totals (a random country of the 246 and a random threshold a request), a random offset
 * page up to the last (sorted by name, totals), and the plain list 20 with skipTotal.
 */
export function cityScenarios(ctx: ScenarioContext): Scenario[] {
  if (!ctx.cities) return [];
  const url = records(ctx, 'cities');
  const lastPage = Math.floor(ctx.cities.rows / 20);
  return [
    {
      key: 's10-relation', number: 10, label: "cities: filter country.code = <random> && population > <random>, sort -population, totals, page cache bypassed", kind: 'read', rules: {},
      load: { url, script: wrkScript('cities-lists.lua'), scriptArgs: ['relation', ctx.cities.codes.join(','), CITY_THRESHOLDS.join(',')] },
    },
    {
      key: 's10-deep', number: 10, label: `cities: sort=name&page=<random 1..${lastPage}>, totals, page cache bypassed`, kind: 'read', rules: {},
      load: { url, script: wrkScript('cities-lists.lua'), scriptArgs: ['deep', String(lastPage)] },
    },
    {
      key: 's10-nocache', number: 10, label: 'cities: list 20, skipTotal, page cache bypassed', kind: 'read', rules: {},
      load: { url: `${url}?page=1&perPage=20&skipTotal=1`, script: wrkScript('distinct-query.lua') },
    },
  ];
}

/** Mixed (6): the list of scenario 3 (with totals, largest set) while a second load updates posts of that set. */
export function mixedScenario(ctx: ScenarioContext): Scenario {
  const [set, info] = ctx.sets.b ? ['b', ctx.sets.b] : ['a', ctx.sets.a];
  const size = sizeLabel(info.rows);
  return {
    key: `s6-mixed-${size}`, number: 6, label: `list 20 with totals (${size} rows) while 16 connections update posts`, kind: 'read',
    rules: { [info.collection]: 'open' }, load: { url: `${records(ctx, info.collection)}?page=1&perPage=20` },
    secondary: {
      url: ctx.svcUrl, connections: 16, headers: bearer(ctx), timeoutS: 10, script: wrkScript('update-post.lua'),
      scriptArgs: [`/api/collections/${info.collection}/records/`, `post${set}`, String(info.rows)],
    },
    fastify: `f-list-${size}`,
  };
}

/** Create (5) at 64 and 500 connections; `tag` keeps bodies unique across wrk processes. */
export function createScenarios(ctx: ScenarioContext): Scenario[] {
  const mk = (connections: number): Scenario => ({
    key: `s5-create-${connections}`, number: 5, label: `create a post, rule @request.auth.id != '', ${connections} connections`, kind: 'write',
    rules: { [ctx.writeCollection]: 'open' },
    load: {
      url: records(ctx, ctx.writeCollection), connections, headers: bearer(ctx), timeoutS: 10,
      script: wrkScript('create-post.lua'), scriptArgs: [ctx.user.id, `c${connections}`],
    },
  });
  return [mk(64), mk(500)];
}

/** auth-refresh and auth-with-password (7). */
export function authScenarios(ctx: ScenarioContext): Scenario[] {
  const base = `${ctx.svcUrl}/api/collections/users`;
  return [
    {
      key: 's7-refresh', number: 7, label: 'auth-refresh, bearer token', kind: 'auth', rules: {},
      load: { url: `${base}/auth-refresh`, headers: bearer(ctx), script: wrkScript('static.lua'), scriptArgs: ['POST'] },
    },
    {
      // Two connections a hash in flight: while svc hashes for one, the other has its next request
      // waiting (the raw reference never waits for a client). A deeper queue would only leave
      // hashes running after wrk stops, into the next series' time.
      key: 's7-password', number: 7, label: `auth-with-password (argon2id), ${PASSWORD_CONNECTIONS} connections`, kind: 'auth', rules: {},
      load: {
        url: `${base}/auth-with-password`, connections: PASSWORD_CONNECTIONS, script: wrkScript('static.lua'), timeoutS: 10,
        scriptArgs: ['POST', JSON.stringify({ identity: userEmail(ctx.user.index), password: USER_PASSWORD })],
      },
    },
  ];
}

/** Delete by id (8), walking `idsFile` (one id per line). */
export function deleteScenario(ctx: ScenarioContext, idsFile: string): Scenario {
  return {
    key: 's8-delete', number: 8, label: 'delete by id, rule author = @request.auth.id', kind: 'write', rules: { [ctx.writeCollection]: 'open' },
    load: { url: ctx.svcUrl, headers: bearer(ctx), timeoutS: 10, script: wrkScript('delete-ids.lua'), scriptArgs: [`/api/collections/${ctx.writeCollection}/records/`, idsFile] },
  };
}

/** The Fastify reference loads: get by id, and list 20 with and without the count, per set. */
export function fastifyLoads(ctx: ScenarioContext): Array<{ key: string; label: string; load: Load }> {
  const a = ctx.sets.a;
  const out = [{ key: 'f-get', label: 'Fastify: get by id', load: { url: `${ctx.fastifyUrl}/${a.collection}/${postId('a', Math.floor(a.rows / 2))}` } }];
  for (const info of Object.values(ctx.sets)) {
    if (!info) continue;
    const size = sizeLabel(info.rows);
    out.push(
      { key: `f-list-${size}`, label: `Fastify: list 20 with COUNT(*) (${size} rows)`, load: { url: `${ctx.fastifyUrl}/${info.collection}?page=1&perPage=20` } },
      { key: `f-list-skip-${size}`, label: `Fastify: list 20 without count (${size} rows)`, load: { url: `${ctx.fastifyUrl}/${info.collection}?page=1&perPage=20&skipTotal=1` } },
    );
  }
  return out;
}

/** `10k`, `100k`, … */
export function sizeLabel(rows: number): string {
  return rows >= 1000 && rows % 1000 === 0 ? `${rows / 1000}k` : String(rows);
}
