/**
 * The cities data of the list tests (bench/lib/cities.ts) on this run's backend
 * (test/helpers/backend.ts). On SQLite it is bench/lib/cities.ts's loadCities as it is (the
 * collections made through the API, the rows written into the stopped server's file). On
 * PostgreSQL the same collections are made through the API of a server on the directory's
 * database, and the same rows, in the same order (so the identity column that stands for SQLite's
 * rowid follows the source order), are inserted into that database, then analyzed.
 */
import pg from 'pg';
import { COUNTRIES_COLLECTION, allCities, citiesCollection, cityId, countryId, loadCities, type CitiesData } from '../../bench/lib/cities.js';
import { backendEnv, TEST_BACKEND } from './backend.js';
import { startSvc } from './server.js';

/** Rows per INSERT statement (8 parameters a city: under PostgreSQL's 65,535 parameters). */
const CHUNK = 5000;

/** Loads the 135,233 cities (or the first `limit`) into `dataDir`; its superuser `email`/`password` must exist. */
export async function loadCitiesData(dataDir: string, email: string, password: string, limit?: number): Promise<CitiesData> {
  if (TEST_BACKEND !== 'postgres') return loadCities(dataDir, email, password, limit);
  const cities = limit === undefined ? allCities() : allCities().slice(0, limit);
  const srv = await startSvc({ dataDir, superuser: false });
  try {
    const login = await srv.api('POST', '/api/collections/_superusers/auth-with-password', { body: { identity: email, password } });
    if (login.status !== 200) throw new Error(`superuser login failed: ${login.text}`);
    const token = login.body.token as string;
    const create = async (def: Record<string, unknown>): Promise<{ id: string }> => {
      const r = await srv.api('POST', '/api/collections', { body: def, token });
      if (r.status !== 201) throw new Error(`create collection failed (${r.status}): ${r.text}`);
      return r.body;
    };
    // the definitions of bench/lib/cities.ts loadCities
    const countries = await create(COUNTRIES_COLLECTION);
    await create(citiesCollection(countries.id));
  } finally {
    await srv.stop();
  }
  const perCountry = new Map<string, number>();
  for (const c of cities) perCountry.set(c.country, (perCountry.get(c.country) ?? 0) + 1);
  const now = new Date().toISOString().replace('T', ' ');
  const client = new pg.Client({ connectionString: (await backendEnv(dataDir)).SERVICE_DATABASE_URL });
  await client.connect();
  try {
    await client.query('BEGIN');
    const insert = async (table: string, cols: string[], rows: unknown[][]) => {
      for (let i = 0; i < rows.length; i += CHUNK) {
        const part = rows.slice(i, i + CHUNK);
        const values = part.map((_, r) => `(${cols.map((_c, k) => `$${r * cols.length + k + 1}`).join(', ')})`).join(', ');
        await client.query(`INSERT INTO "${table}" (${cols.map((c) => `"${c}"`).join(', ')}) VALUES ${values}`, part.flat());
      }
    };
    await insert('countries', ['id', 'created', 'updated', 'name', 'code'], [...perCountry.keys()].sort().map((code) => [countryId(code), now, now, `Country ${code}`, code]));
    await insert('cities', ['id', 'created', 'updated', 'name', 'country', 'population', 'lat', 'lng'],
      cities.map((c) => [cityId(c.cityId), now, now, c.name, countryId(c.country), c.population, c.loc.coordinates[1], c.loc.coordinates[0]]));
    await client.query('COMMIT');
    await client.query('ANALYZE "countries"');
    await client.query('ANALYZE "cities"');
  } finally {
    await client.end();
  }
  return { countries: [...perCountry].map(([code, n]) => ({ code, cities: n })).sort((a, b) => b.cities - a.cities), cities: cities.length };
}
