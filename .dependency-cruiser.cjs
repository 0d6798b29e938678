// The folder boundaries of ARCHITECTURE.md ("Folders"), checked by `npm run lint:deps`
// (scripts/lint-deps.mjs runs dependency-cruiser with this file over src/, workers/, cli/ and
// devtool/). This file is the source of truth: the "may import" column of ARCHITECTURE.md is
// BASE and MAY_IMPORT below, written out (lint:deps fails when the two differ).
//
// Type-only imports (`import type`, imports used only as types) count like value imports: a type
// is a dependency on the folder that defines it (ARCHITECTURE.md says why).
//
// Paths are written as the TypeScript sources (`src/store/open.ts`); the patterns match `.js` too,
// since lint:deps cruises a JavaScript copy of the sources (TypeScript 7 has no compiler API
// for dependency-cruiser to read .ts with).
//
// To change a boundary: change MAY_IMPORT (or KNOWN_CROSSINGS / KNOWN_CYCLE_GROUPS) here and the
// table in ARCHITECTURE.md together, in the same commit.

/** The folders of ARCHITECTURE.md. `src` is the files directly under src/ (server.ts, index.ts);
 *  `src/store` is the files directly under src/store/ (its sub-folders are folders of their own);
 *  any other folder includes its sub-folders (src/auth/methods/, src/collections/fields/). */
const FOLDERS = [
  'src', 'src/api', 'src/app', 'src/auth', 'src/boot', 'src/cache', 'src/collections', 'src/config', 'src/context', 'src/errors',
  'src/files', 'src/http', 'src/log', 'src/logs', 'src/mail', 'src/meta', 'src/model', 'src/ops', 'src/realtime', 'src/records',
  'src/rules', 'src/settings', 'src/store', 'src/store/errors', 'src/store/pg', 'src/store/shared', 'src/store/sql', 'src/store/sqlite',
  'src/uploads', 'workers', 'cli', 'devtool',
];

/** Folders that import no folder at all, not even BASE: devtool (it spawns the CLI), and the typed
 *  storage errors, which src/errors/ imports (anything they imported would close a cycle). */
const IMPORTS_NOTHING = ['devtool', 'src/store/errors'];

/** Every other folder may import these: they import nothing of the project's own (src/model/
 *  holds the plain data types every layer shares, storage included: the schema model). */
const BASE = ['src/errors', 'src/log', 'src/model'];

/** Per folder, the other folders it may import besides BASE: the import graph as it is. */
const MAY_IMPORT = {
  'src': ['src/api', 'src/app', 'src/auth', 'src/boot', 'src/collections', 'src/config', 'src/context', 'src/files', 'src/http', 'src/logs', 'src/mail', 'src/meta', 'src/ops', 'src/realtime', 'src/records', 'src/settings', 'src/store', 'src/store/pg', 'src/store/sqlite', 'src/uploads'],
  // ops: the backup routes (backups.ts) over the backups folder and BackupError of src/ops/
  // realtime: the hub's counters type (RealtimeMetrics), read by the metrics route (api/metrics.ts)
  // cache: the RecordCache type of get by id's cache (RouteStore, api/context.ts); no src/context:
  // the routes take a RouteStore, not the Store
  'src/api': ['src/app', 'src/auth', 'src/cache', 'src/collections', 'src/config', 'src/files', 'src/http', 'src/logs', 'src/mail', 'src/meta', 'src/ops', 'src/realtime', 'src/records', 'src/rules', 'src/settings', 'src/store', 'src/uploads'],
  // settings: the FeatureService type of the services an app runs over (AppServices)
  // context: only the AuthRecordSource type (AppRepository, src/context/auth-repositories.ts); the runtime takes no Store
  'src/app': ['src', 'src/api', 'src/auth', 'src/collections', 'src/config', 'src/context', 'src/files', 'src/http', 'src/mail', 'src/records', 'src/rules', 'src/settings', 'src/store', 'src/uploads'],
  // workers: the password hashers' task type (workers/hash.ts)
  'src/auth': ['src/cache', 'src/collections', 'src/config', 'src/context', 'src/files', 'src/mail', 'src/records', 'src/rules', 'src/store', 'workers'],
  // the composition root: the services over an opened data directory (the data directory's open,
  // stored files), for the server and offline commands, and the server's realtime stage (the hub
  // and its transports' route types), and the narrow repositories the features take (repositories.ts,
  // typed by each feature: uploads for the persistence mode's UploadRepository)
  'src/boot': ['src/api', 'src/app', 'src/auth', 'src/collections', 'src/config', 'src/context', 'src/files', 'src/http', 'src/mail', 'src/ops', 'src/realtime', 'src/records', 'src/settings', 'src/store', 'src/uploads'],
  'src/cache': ['src/store'],
  // no src/context: CollectionsService takes a CollectionsRepository (src/boot/repositories.ts)
  'src/collections': ['src/auth', 'src/cache', 'src/files', 'src/records', 'src/rules', 'src/store'],
  'src/config': ['src/files'],
  // the data context the domain services share (Store: registry, reader, writer, statement
  // stores, rule book, caches, record codecs), built by src/boot/ over the open database's parts
  'src/context': ['src/cache', 'src/collections', 'src/records', 'src/rules', 'src/store', 'src/store/errors'],
  // the typed storage errors, answered in one place (knownApiError, src/errors/api-error.ts)
  'src/errors': ['src/store/errors'],
  // no src/context: RecordFiles takes a FileRepository (src/boot/repositories.ts)
  'src/files': ['src/collections', 'src/records', 'src/rules', 'src/store'],
  'src/http': [],
  'src/log': [],
  // the request logs: the request observer's types (http), the filter grammar (rules) and its
  // parsed tree's types (store/rule-types.ts), the worker script's path (store/worker-url.ts) and
  // the request-log thread's batch encoding (workers/logs-wire.ts)
  'src/logs': ['src/http', 'src/rules', 'src/store', 'workers'],
  // no src/context: the queue and the sender identities take a MailRepository (src/boot/repositories.ts)
  'src/mail': ['src/collections', 'src/config', 'src/records', 'src/store'],
  // plain data types (the schema model), imported by storage and the features alike
  'src/model': [],
  'src/meta': ['src/http', 'src/store'],
  // no src/context: the import takes an ImportRepository (src/boot/repositories.ts), the schema
  // commands a SchemaSource (the registry)
  'src/ops': ['src/cache', 'src/collections', 'src/config', 'src/files', 'src/records', 'src/rules', 'src/store'],
  // http: the transports' route module (routes.ts: SSE, the subscription POST, the WebSocket endpoint)
  // no src/context: the hub takes a RealtimeRepository (src/boot/repositories.ts)
  'src/realtime': ['src/auth', 'src/collections', 'src/http', 'src/records', 'src/rules', 'src/store', 'src/store/sql'],
  // no src/context: the reader, the lister and the writer take narrow repositories
  // (src/records/record-repositories.ts, built by src/boot/record-repositories.ts)
  'src/records': ['src/auth', 'src/cache', 'src/collections', 'src/files', 'src/ops', 'src/rules', 'src/store', 'src/store/sql'],
  // store/sql: the value helpers of bound parameters (rule-values.ts), shared with the emitters
  'src/rules': ['src/cache', 'src/collections', 'src/store', 'src/store/sql'],
  // auth and http: the capability's route module (routes.ts: who is a superuser, the route types)
  // no src/context: FeatureService takes a SettingsRepository (src/boot/repositories.ts)
  'src/settings': ['src/auth', 'src/cache', 'src/collections', 'src/http', 'src/store'],
  // Storage: the store folders (and src/model/, BASE), and the pg reader's worker; nothing of the
  // features built on it (the Store context over it is src/context/).
  'src/store': ['src/store/errors', 'src/store/pg', 'src/store/sql', 'src/store/sqlite'],
  // storage's typed errors (GuardFailed, NotFound, InvalidQuery, UniqueViolation, …): no HTTP status or code
  'src/store/errors': [],
  'src/store/pg': ['src/store', 'src/store/errors', 'src/store/shared', 'src/store/sql', 'src/store/sqlite'],
  'src/store/shared': ['src/store', 'src/store/sqlite'],
  // the dialect-neutral SQL builders: the store's interfaces (the rule compiler's types are
  // src/store/rule-types.ts, the schema's src/model/; the parser is given to the rule emitter)
  'src/store/sql': ['src/store', 'src/store/errors'],
  'src/store/sqlite': ['src/store', 'src/store/errors', 'src/store/shared', 'src/store/sql'],
  // no src/context: the persistence mode takes an UploadRepository (src/boot/repositories.ts)
  'src/uploads': ['src/store'],
  'workers': ['src/store'],
  // cli/app-modules.ts also loads src/server.ts and src/auth/superuser-admin.ts through import()
  // of a computed specifier, which no static check sees: `src` and `src/auth` are listed for them.
  'cli': ['src', 'src/app', 'src/auth', 'src/boot', 'src/collections', 'src/config', 'src/files', 'src/meta', 'src/ops', 'src/records', 'src/store', 'src/store/pg', 'src/store/sqlite'],
  'devtool': [],
};

/** Imports that cross a line the architecture means to hold (storage importing the features built
 *  on it; a feature folder importing src/http/), allowed file by file, exactly as they are today,
 *  so that no new one can appear. Each from-file may import the listed files on top of what its
 *  folder may import. */
const KNOWN_CROSSINGS = {
  // A feature folder reading a type of src/http/ (the route body sink a chunk arrives through).
  'src/uploads/upload-store.ts': { why: 'known crossing: type imports (BodySink, Reply) from src/http/types.ts, to be removed by moving the body-sink types out of src/http/', to: ['src/http/types.ts'] },
};

/** Folders that import each other in a cycle today (known exceptions to "no circular dependencies
 *  between folders"): inside a group, an allowed import may close a cycle; a cycle that leaves its
 *  group, or runs through folders of no group, is refused. */
const KNOWN_CYCLE_GROUPS = [
  // The domain: the features import each other (records ↔ collections ↔ auth, files, mail, ops,
  // rules, the Store context of src/context/). The caches and the settings are in no cycle since
  // storage stopped importing the features (their cycles ran through src/store/).
  ['src/auth', 'src/collections', 'src/config', 'src/context', 'src/files', 'src/mail', 'src/ops', 'src/records', 'src/rules'],
  // Storage: the store folders import each other (the interfaces ↔ the SQL builders ↔ each
  // backend's statements) and the reader and writer threads' scripts (workers/).
  ['src/store', 'src/store/pg', 'src/store/shared', 'src/store/sql', 'src/store/sqlite', 'workers'],
  // The server and the framework: server.ts ↔ src/app (app.start()) ↔ src/api (the route context).
  ['src', 'src/api', 'src/app'],
];

/** The uWS packages (only src/http/ imports them). */
const UWS = '(^|/)(node_modules/)?(@btc-vision/uwebsockets\\.js|@trufflesuite/uws-js-unofficial|uWebSockets\\.js|uws)(/|$)';

// ---- patterns ----------------------------------------------------------------------------------
const esc = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** A source file, as .ts or as its .js copy. */
const file = (p) => `^${esc(p.replace(/\.ts$/, ''))}\\.[jt]s$`;
/** The modules of a folder (see FOLDERS). */
const folder = (f) => (f === 'src' || f === 'src/store' ? `^${esc(f)}/[^/]+$` : `^${esc(f)}/`);
/** A folder as dependency-cruiser names folders (folder-scope rules): it and its sub-folders. */
const folderDir = (f) => (f === 'src' || f === 'src/store' ? `^${esc(f)}$` : `^${esc(f)}(/|$)`);
const OWN = '^(src|workers|cli|devtool)/';
/** The route modules of capability folders: the one file of a feature folder that speaks HTTP
 *  (bound from the route table of src/server.ts, as the auth methods' routes() are served). */
const CAPABILITY_ROUTES = ['src/settings/routes.ts', 'src/realtime/routes.ts', 'src/realtime/oauth2-redirect.ts'];
const FEATURES = ['src/records', 'src/collections', 'src/context', 'src/auth', 'src/files', 'src/rules', 'src/cache', 'src/store', 'src/store/errors', 'src/store/sqlite', 'src/store/shared', 'src/store/sql', 'src/store/pg', 'src/realtime', 'src/mail', 'src/settings', 'src/uploads'];

for (const f of Object.keys(MAY_IMPORT)) if (!FOLDERS.includes(f)) throw new Error(`.dependency-cruiser.cjs: unknown folder ${f}`);
for (const f of FOLDERS) if (!MAY_IMPORT[f]) throw new Error(`.dependency-cruiser.cjs: no MAY_IMPORT entry for ${f}`);

/** The folder of a source file. */
const folderOf = (p) => [...FOLDERS].sort((a, b) => b.length - a.length).find((f) => new RegExp(folder(f)).test(p));

/**
 * A forbidden rule with the known crossings of its from-side taken out of it: each crossing file
 * gets a rule of its own that lets it import, besides what the rule allows, exactly its listed files.
 */
function withCrossings(rule) {
  const fromRe = new RegExp(rule.from.path);
  const crossing = Object.keys(KNOWN_CROSSINGS).filter((p) => fromRe.test(p));
  if (crossing.length === 0) return [rule];
  const general = { ...rule, from: { ...rule.from, pathNot: [...(rule.from.pathNot ?? []), ...crossing.map(file)] } };
  return [general, ...crossing.map((p) => ({
    ...rule,
    name: `${rule.name}:${p}`,
    comment: `${rule.comment} ${p} also imports ${KNOWN_CROSSINGS[p].to.join(', ')}: ${KNOWN_CROSSINGS[p].why}.`,
    from: { ...rule.from, path: file(p) },
    to: { ...rule.to, pathNot: [...(rule.to.pathNot ?? []), ...KNOWN_CROSSINGS[p].to.map(file)] },
  }))];
}

const mayImport = (f) => (IMPORTS_NOTHING.includes(f) ? [] : [...new Set([...BASE, ...MAY_IMPORT[f]])].filter((g) => g !== f).sort());

const boundaries = FOLDERS.flatMap((f) => withCrossings({
  name: `may-import:${f}`,
  severity: 'error',
  comment: mayImport(f).length
    ? `${f} may import only ${mayImport(f).join(', ')} (ARCHITECTURE.md, "Folders").`
    : `${f} may import no other folder of src/, workers/, cli/ or devtool/ (ARCHITECTURE.md, "Folders").`,
  from: { path: folder(f) },
  to: { path: OWN, pathNot: [folder(f), ...mayImport(f).map(folder)] },
}));

// Each known crossing must still exist in the table's terms: its target outside what its folder may import.
for (const [p, c] of Object.entries(KNOWN_CROSSINGS)) {
  const f = folderOf(p);
  for (const t of c.to) if (mayImport(f).includes(folderOf(t))) throw new Error(`.dependency-cruiser.cjs: ${p} → ${t} is no crossing (${f} may import ${folderOf(t)})`);
}

const inGroup = KNOWN_CYCLE_GROUPS.flat();

/** How ARCHITECTURE.md names a folder: in the first column of its "Folders" table, and in the
 *  "may import" column (src/ folders without the `src/`). */
const rowName = (f) => (f === 'src' ? '`src/*.ts`' : `\`${f}/\``);
const shortName = (f) => (f === 'src' ? 'src/*.ts' : f.startsWith('src/') ? f.slice(4) : `${f}/`);

module.exports = {
  forbidden: [
    ...boundaries,
    ...withCrossings({
      name: 'no-http-in-features',
      severity: 'error',
      comment: 'Feature folders do not import src/http/, but for their capability route modules (src/settings/routes.ts, src/realtime/routes.ts, src/realtime/oauth2-redirect.ts): the auth services read a ClientInfo, which the route layer\'s Req satisfies (ARCHITECTURE.md, "Folders").',
      from: { path: `^(${FEATURES.map(esc).join('|')})/`, pathNot: CAPABILITY_ROUTES.map(file) },
      to: { path: '^src/http/' },
    }),
    {
      name: 'storage-not-api-error',
      severity: 'error',
      comment: 'Storage (src/store/ and its sub-folders, workers/) throws the typed errors of src/store/errors/ and never ApiError: the status, code and envelope are chosen in one place, knownApiError in src/errors/api-error.ts (ARCHITECTURE.md, "Folders").',
      from: { path: '^(src/store|workers)/' },
      to: { path: file('src/errors/api-error.ts') },
    },
    {
      name: 'collections-not-auth-methods',
      severity: 'error',
      comment: 'src/collections/ asks a sign-in method for its options check through src/auth/method-registry.ts and imports no module of src/auth/methods/ (ARCHITECTURE.md, "Folders").',
      from: { path: '^src/collections/' },
      to: { path: '^src/auth/methods/' },
    },
    {
      name: 'uws-only-in-http',
      severity: 'error',
      comment: 'Only src/http/ imports uWS (ARCHITECTURE.md, "Folders").',
      from: { pathNot: '^src/http/' },
      to: { path: UWS },
    },
    {
      name: 'devtool-not-src',
      severity: 'error',
      comment: 'devtool/ spawns bin/svc.js and imports nothing from src/ (ARCHITECTURE.md, "Folders").',
      from: { path: '^devtool/' },
      to: { path: '^src/' },
    },
    {
      name: 'no-test-or-bench',
      severity: 'error',
      comment: 'Nothing in src/, workers/, cli/ or devtool/ imports test/ or bench/.',
      from: {},
      to: { path: '^(\\.\\./)*(test|bench)/' },
    },
    {
      name: 'not-to-unresolvable',
      severity: 'error',
      comment: 'An import that does not resolve (a typo, or a file outside src/, workers/, cli/ and devtool/, e.g. test/ or bench/) cannot be checked.',
      from: {},
      // (uWS is an optional dependency: where neither package installs, src/http/ falls back to node:http)
      to: { couldNotResolve: true, pathNot: UWS },
    },
    // Folder cycles: none outside the known groups.
    ...KNOWN_CYCLE_GROUPS.map((group, i) => ({
      name: `no-folder-cycle:group-${i + 1}`,
      severity: 'error',
      scope: 'folder',
      comment: `Folders of the known cycle group ${group.join(', ')} may import each other in cycles (known exception, .dependency-cruiser.cjs KNOWN_CYCLE_GROUPS); no cycle may leave the group.`,
      from: { path: `(${group.map(folderDir).join('|')})` },
      to: { circular: true, pathNot: `(${group.map(folderDir).join('|')})` },
    })),
    {
      name: 'no-folder-cycle',
      severity: 'error',
      scope: 'folder',
      comment: 'No circular dependencies between folders, other than inside the known groups (.dependency-cruiser.cjs KNOWN_CYCLE_GROUPS).',
      from: { pathNot: `(${inGroup.map(folderDir).join('|')})` },
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    moduleSystems: ['es6', 'cjs'],
    // packages' "exports" maps (jose/jwt/verify, stream-json/streamers/…), as Node resolves them
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'] },
  },
};

// For scripts/lint-deps.mjs, which checks that the "may import" column of ARCHITECTURE.md says
// what BASE and MAY_IMPORT say (not enumerable: dependency-cruiser refuses unknown configuration keys).
Object.defineProperty(module.exports, 'folderTable', {
  enumerable: false,
  value: FOLDERS.map((f) => ({ row: rowName(f), mayImport: mayImport(f).map(shortName).join(', ') || '—' })),
});
