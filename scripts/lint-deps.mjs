// `npm run lint:deps`: the folder boundaries of ARCHITECTURE.md ("Folders"), checked by
// dependency-cruiser against `.dependency-cruiser.cjs` over src/, workers/, cli/ and devtool/.
//
// dependency-cruiser reads TypeScript only through the compiler API of the `typescript` package
// (versions before 7), which TypeScript 7 no longer ships. So this script first writes a copy of
// the four folders as JavaScript into .scratch/depcruise/ (esbuild, already a devDependency: type
// annotations stripped, every import statement kept) and cruises that copy. Type-only imports
// count like value imports (ARCHITECTURE.md says why): `import type …`, `export type … from`
// and `{ type X }` specifiers are kept as plain imports, and imports used only as types are not
// dropped (`verbatimModuleSyntax`). The copy keeps the folder layout, so a violation names the
// source file with `.js` for `.ts` (`src/store/store.js` is src/store/store.ts).
//
//   node scripts/lint-deps.mjs            check the rules; exit 1 and name each violation
//   node scripts/lint-deps.mjs --measure  print the folder graph instead: each folder with the
//                                         folders it imports, edges used only by types marked
import { transformSync } from 'esbuild';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const folders = ['src', 'workers', 'cli', 'devtool'];
const measure = process.argv.includes('--measure');

/** Every .ts file under `dir`, relative to the repository root. */
function tsFiles(dir) {
  const out = [];
  for (const e of readdirSync(join(root, dir), { withFileTypes: true })) {
    const rel = join(dir, e.name);
    if (e.isDirectory()) out.push(...tsFiles(rel));
    else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) out.push(rel);
  }
  return out;
}

/**
 * Type-only import syntax rewritten as value imports, so the copy keeps the edge: `import type`
 * and `export type {…} from` lose the `type`, and `type` before a specifier inside the braces of
 * an import or re-export goes. A rewrite that makes no sense stops esbuild with a syntax error,
 * never silently drops an edge.
 */
function keepTypeImports(src) {
  return src
    .replace(/\bimport\s+type\s+(?=[\w$*{])(?!from\b)/g, 'import ')
    .replace(/\bexport\s+type\s+(?=\*|\{[^}]*\}\s*from\b)/g, 'export ')
    .replace(/\b(import|export)(\s*\{)([^}]*)(\}\s*from\b)/g, (_, kw, open, names, close) =>
      kw + open + names.replace(/(^|[\s,])type\s+(?=[\w$])/g, '$1') + close);
}

/** Writes the JavaScript copy of the four folders under `out`; `types` keeps type-only imports. */
function writeCopy(out, types) {
  rmSync(out, { recursive: true, force: true });
  for (const dir of folders) {
    for (const file of tsFiles(dir)) {
      const src = readFileSync(join(root, file), 'utf8');
      let code;
      try {
        code = transformSync(types ? keepTypeImports(src) : src, {
          loader: 'ts', format: 'esm', target: 'es2022', sourcefile: file,
          tsconfigRaw: { compilerOptions: { verbatimModuleSyntax: types } },
        }).code;
      } catch (err) {
        console.error(`lint:deps: could not read ${file}: ${err.message}`);
        process.exit(2);
      }
      const dest = join(out, file.replace(/\.ts$/, '.js'));
      mkdirSync(dirname(dest), { recursive: true });
      writeFileSync(dest, code);
    }
  }
}

const depcruise = join(root, 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruise.mjs');
const config = join(root, '.dependency-cruiser.cjs');

/** Runs dependency-cruiser in `cwd` over the four folders; returns its exit status and stdout. */
function cruise(cwd, args) {
  const r = spawnSync(process.execPath, [depcruise, '--config', config, ...args, ...folders], { cwd, encoding: 'utf8', maxBuffer: 64 << 20 });
  if (r.error) throw r.error;
  return r;
}

/**
 * The "may import" column of ARCHITECTURE.md's "Folders" table against the configuration (its
 * `folderTable`): one row per folder, the last cell exactly as the configuration writes it.
 * Returns the differences, one line each.
 */
function tableDrift() {
  const { folderTable } = createRequire(import.meta.url)(config);
  const doc = readFileSync(join(root, 'ARCHITECTURE.md'), 'utf8');
  const section = doc.slice(doc.indexOf('\n## Folders\n'), doc.indexOf('\n## ', doc.indexOf('\n## Folders\n') + 1));
  const rows = new Map();
  for (const line of section.split('\n')) {
    const cells = line.split(' | ');
    if (line.startsWith('| `') && cells.length >= 3) rows.set(cells[0].slice(2), cells.at(-1).replace(/ \|$/, ''));
  }
  const drift = [];
  for (const { row, mayImport } of folderTable) {
    if (!rows.has(row)) drift.push(`no row for ${row}`);
    else if (rows.get(row) !== mayImport) drift.push(`${row}: the table says "${rows.get(row)}", the configuration "${mayImport}"`);
  }
  return drift;
}

const copy = join(root, '.scratch', 'depcruise', 'all');
writeCopy(copy, true);

if (!measure) {
  const r = cruise(copy, ['--output-type', 'err-long']);
  process.stdout.write(r.stdout);
  process.stderr.write(r.stderr);
  const drift = tableDrift();
  if (drift.length > 0) {
    console.error('lint:deps: the "may import" column of ARCHITECTURE.md ("Folders") differs from .dependency-cruiser.cjs (MAY_IMPORT):');
    for (const d of drift) console.error(`  ${d}`);
    if (r.status === 0) process.exit(1);
  }
  if (r.status !== 0) {
    console.error('\nlint:deps: an import crosses a folder boundary of ARCHITECTURE.md ("Folders").');
    console.error('The rules are in .dependency-cruiser.cjs (paths above are the .ts sources, shown as .js).');
    console.error('Import through an allowed folder instead, or, if the architecture changes, change the');
    console.error('rule and the "may import" column of ARCHITECTURE.md together.');
  }
  process.exit(r.status ?? 1);
}

// --measure: the folder graph with all imports, and again with type-only imports dropped.
/** The folder a module belongs to, as the "Folders" table of ARCHITECTURE.md names them. */
function folderOf(path) {
  const m = /^(src\/store\/(?:sqlite|shared|pg)|src\/[^/]+(?=\/)|src|workers|cli|devtool)\//.exec(path);
  return m ? m[1] : null;
}
function folderGraph(dir) {
  const r = cruise(dir, ['--output-type', 'json', '--validate', 'false']);
  const graph = new Map();
  for (const m of JSON.parse(r.stdout).modules) {
    const from = folderOf(m.source);
    if (!from) continue;
    if (!graph.has(from)) graph.set(from, new Map());
    for (const d of m.dependencies) {
      const to = folderOf(d.resolved);
      if (!to || to === from) continue;
      const files = graph.get(from).get(to) ?? new Set();
      files.add(`${m.source} → ${d.resolved}`);
      graph.get(from).set(to, files);
    }
  }
  return graph;
}
const all = folderGraph(copy);
const valuesCopy = join(root, '.scratch', 'depcruise', 'values');
writeCopy(valuesCopy, false);
const values = folderGraph(valuesCopy);
for (const [from, tos] of [...all].sort(([a], [b]) => a.localeCompare(b))) {
  const list = [...tos.keys()].sort().map((to) => (values.get(from)?.has(to) ? to : `${to} (types only)`));
  console.log(`${from} → ${list.join(', ') || '—'}`);
  if (process.argv.includes('--files')) {
    for (const to of [...tos.keys()].sort()) for (const e of tos.get(to)) console.log(`    ${e}${values.get(from)?.get(to)?.has(e) ? '' : ' (types only)'}`);
  }
}
