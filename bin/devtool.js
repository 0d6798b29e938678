#!/usr/bin/env node
// `devtool` launcher (the site dev tool, 3-devtool.md): runs the compiled CLI when a build exists,
// else the TypeScript sources via tsx (a fresh checkout works before `npm run build`).
import { existsSync } from 'node:fs';

const compiled = new URL('../dist/devtool/main.js', import.meta.url);
if (existsSync(compiled)) {
  await import(compiled.href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import(new URL('../devtool/main.ts', import.meta.url).href);
}
