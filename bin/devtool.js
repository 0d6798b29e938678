#!/usr/bin/env node
// `devtool` launcher (the site dev tool, 3-devtool.md): runs the compiled CLI when a build exists,
// else the TypeScript sources via tsx (a fresh checkout works before `npm run build`).
import { existsSync } from 'node:fs';

const compiled = new URL('../dist/devtool/main.js', import.meta.url);
if (existsSync(compiled)) {
  await import(compiled.href);
} else {
  // tsx is a devDependency: an installed package has dist/ (package.json "prepack") and never gets here
  const tsx = await import('tsx/esm/api').catch(() => null);
  if (!tsx) {
    process.stderr.write('devtool: dist/ is missing and tsx is not installed; run `npm run build` in the package folder\n');
    process.exit(1);
  }
  tsx.register();
  await import(new URL('../devtool/main.ts', import.meta.url).href);
}
