// One statement on PostgreSQL, run synchronously for the tests' withDb on the server-SQL backend
// (test/helpers/auth-helpers.ts): reads {url, sql, params, mode, raw} as JSON on stdin, writes
// {rows, changes} or {error} as JSON on stdout. `?` placeholders are numbered as the server's
// statements are (dist/src/store/pg/placeholders.js); int8 values come back as numbers.
const pg = require('pg');
const path = require('node:path');
let input = '';
process.stdin.on('data', (d) => (input += d));
process.stdin.on('end', async () => {
  const { url, sql, params, raw } = JSON.parse(input);
  const { toPgPlaceholders } = await import(path.join(__dirname, '..', '..', 'dist', 'src', 'store', 'pg', 'placeholders.js'));
  pg.types.setTypeParser(20, (v) => Number(v));
  const client = new pg.Client({ connectionString: url });
  try {
    await client.connect();
    const r = await client.query({ text: toPgPlaceholders(sql), values: params, rowMode: raw ? 'array' : undefined });
    process.stdout.write(JSON.stringify({ rows: r.rows ?? [], changes: r.rowCount ?? 0 }));
  } catch (err) {
    process.stdout.write(JSON.stringify({ error: err.message }));
  } finally {
    await client.end().catch(() => undefined);
  }
});
