/**
 * Builds the admin UI (`npm run build:admin`): bundles admin/src/main.tsx with esbuild (Preact,
 * JSX, minified) into admin-dist/assets/app-<hash>.js and app-<hash>.css and writes
 * admin-dist/index.html referencing them. admin-dist/ is committed, so `npm ci && npm start`
 * serves the UI without this step. Fails when the gzipped JavaScript passes the budget.
 */
import { build } from 'esbuild';
import { mkdir, rm, writeFile, readFile } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const OUT = join(ROOT, 'admin-dist');
/** First-load budget: compressed JavaScript (issue 19). */
const JS_GZIP_BUDGET = 150 * 1024;

await rm(OUT, { recursive: true, force: true });
await mkdir(join(OUT, 'assets'), { recursive: true });
const result = await build({
  absWorkingDir: ROOT,
  entryPoints: { app: 'admin/src/main.tsx' },
  outdir: join(OUT, 'assets'),
  entryNames: '[name]-[hash]',
  assetNames: '[name]-[hash]',
  bundle: true,
  minify: true,
  format: 'esm',
  target: ['chrome111', 'firefox115', 'safari16.4'],
  jsx: 'automatic',
  jsxImportSource: 'preact',
  legalComments: 'none',
  metafile: true,
  sourcemap: false,
  define: { 'process.env.NODE_ENV': '"production"' },
  logLevel: 'warning',
});

const outputs = Object.keys(result.metafile.outputs).map((p) => resolve(ROOT, p));
const js = outputs.find((p) => p.endsWith('.js'));
const css = outputs.find((p) => p.endsWith('.css'));
if (!js || !css) throw new Error(`expected one .js and one .css output, got: ${outputs.join(', ')}`);

const icon = "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 32 32'%3E%3Crect width='32' height='32' rx='7' fill='%232f5bd3'/%3E%3Cpath d='M9 20c0 2 2 3 5 3h3c3 0 5-1.5 5-4s-2-3.5-5-4h-3c-3-.5-5-1.5-5-4s2-4 5-4h3c3 0 5 1 5 3' fill='none' stroke='white' stroke-width='2.6' stroke-linecap='round'/%3E%3C/svg%3E";
const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>svc admin</title>
<link rel="icon" href="${icon}">
<link rel="stylesheet" href="/_/assets/${basename(css)}">
<script type="module" src="/_/assets/${basename(js)}"></script>
</head>
<body>
<div id="app"></div>
<noscript>The svc admin UI needs JavaScript.</noscript>
</body>
</html>
`;
await writeFile(join(OUT, 'index.html'), html);

const sizes = [];
for (const p of [js, css]) {
  const bytes = await readFile(p);
  sizes.push({ file: `assets/${basename(p)}`, bytes: bytes.length, gzip: gzipSync(bytes, { level: 9 }).length });
}
for (const s of sizes) console.log(`admin-dist/${s.file}  ${(s.bytes / 1024).toFixed(1)} KiB  (gzip ${(s.gzip / 1024).toFixed(1)} KiB)`);
const jsGzip = sizes[0].gzip;
if (jsGzip > JS_GZIP_BUDGET) {
  console.error(`the admin JavaScript is ${jsGzip} bytes gzipped, over the ${JS_GZIP_BUDGET}-byte budget`);
  process.exit(1);
}
