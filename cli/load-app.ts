/**
 * Loading the app module of `--app=FILE` / SERVICE_APP (docs/framework.md: every
 * command that serves or touches the database takes `--app`).
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { defineApp, isApp, type App } from '../src/app/app.js';
import { AppDefinitionError } from '../src/app/definition.js';

/** Registers tsx's ESM loader for a `.ts` app. @throws Error saying how to run it without tsx */
async function registerTypeScript(path: string): Promise<void> {
  const api = 'tsx/esm/api';
  try {
    const { register } = (await import(api)) as { register: () => unknown };
    register();
  } catch {
    throw new Error(`${path} is TypeScript: install tsx in the project (npm install -D tsx) or compile the app to .js first`);
  }
}

/**
 * The app module `file` names (--app / SERVICE_APP), checked: its default export made by
 * defineApp, or a plain definition object that defineApp then checks. Undefined without a file.
 * @throws Error naming the file when it cannot be loaded or its definition is invalid
 */
export async function loadApp(file: string | undefined): Promise<App | undefined> {
  if (!file) return undefined;
  const path = resolve(file);
  let mod: { default?: unknown };
  try {
    // a TypeScript app needs a loader: tsx's, when the project has it installed
    if (/\.[cm]?ts$/.test(path)) await registerTypeScript(path);
    mod = await import(pathToFileURL(path).href);
  } catch (err) {
    throw new Error(`cannot load the app ${path}: ${err instanceof Error ? err.message : String(err)}`);
  }
  const def = mod.default;
  if (isApp(def)) return def;
  if (typeof def !== 'object' || def === null) throw new Error(`the app ${path} has no default export: export default defineApp({...})`);
  try {
    return defineApp(def as never);
  } catch (err) {
    if (err instanceof AppDefinitionError) throw new Error(`the app ${path}: ${err.message}`);
    throw err;
  }
}

