#!/usr/bin/env -S node --max-semi-space-size=4 --heap-growing-percent=50
// `svc` launcher: runs the compiled CLI when a build exists, else the TypeScript sources via tsx
// (a fresh checkout works before `npm run build`).
//
// The node flags bound the main thread's heap under load (bench/README.md, "Memory"):
// - the young generation stays at 2 × 4 MB instead of growing to V8's default 2 × 16 MB: about
//   24 MB less resident, for about 4 µs more scavenging a create;
// - the old generation may grow to 1.5 times what the last full GC left live before the next one,
//   instead of up to four times: under 500 connections of creates the old space peaked at 50 MB
//   with 12 MB live; with this flag at 26 MB, for about 3 µs of full GC a request.
// `npm start` passes the same flags; the benchmark starts the server with the flags of this line.
import { existsSync } from 'node:fs';

const compiled = new URL('../dist/cli/main.js', import.meta.url);
if (existsSync(compiled)) {
  await import(compiled.href);
} else {
  // tsx is a devDependency: an installed package has dist/ (package.json "prepack") and never gets here
  const tsx = await import('tsx/esm/api').catch(() => null);
  if (!tsx) {
    process.stderr.write('svc: dist/ is missing and tsx is not installed; run `npm run build` in the package folder\n');
    process.exit(1);
  }
  tsx.register();
  await import(new URL('../cli/main.ts', import.meta.url).href);
}
