/**
 * The site build (`devtool build`, and every build of a dev session; docs/devtool.md,
 * URL prefix included).
 *
 * - `content/**\/*.md`: YAML front matter between `---` lines (`title`, `layout`, any other keys
 *   for `{{ page.KEY }}`), Markdown through `marked` (GitHub-flavoured). `content/x.md` becomes
 *   `x/index.html`, `content/index.md` and `content/d/index.md` become `index.html` and
 *   `d/index.html`.
 * - The page goes into `layouts/<layout>.html` (default `default`; with no `layouts/default.html` a
 *   bare HTML shell) through the placeholders of template.ts.
 * - `assets/**` is copied to `assets/**` of the output (only files whose size or time changed).
 * - With a URL prefix (`base` other than `/`), every root-relative `href`, `src`, `action` and
 *   `poster` URL is emitted under the prefix; the output itself has no prefix directory.
 * - Output is written in place (only files whose bytes changed), and files no source produced any
 *   more are removed after a successful build; a failed build leaves what it had written.
 *
 * A `SiteBuilder` keeps each page's rendered Markdown keyed by the source's size and modification
 * time, so a rebuild after a one-file edit renders one page (a 1,000-page site rebuilds in tens of
 * milliseconds). Errors are BuildError (file and line).
 */
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, statSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { Marked } from 'marked';
import { parseDocument } from 'yaml';
import { BuildError } from './errors.js';
import type { SiteConfig } from './site.js';
import { Templates, type TemplateSource } from './template.js';

/** What a build is asked to do. */
export interface BuildOptions {
  config: SiteConfig;
  /** absolute output directory (`.svc/site`) */
  outDir: string;
  /** HTML inserted before `</body>` of every page (the dev session's live-reload snippet) */
  inject?: string;
  /** receives the build's progress lines (a dev session captures them into last-build.log) */
  log?: (line: string) => void;
}

/** What one build did. */
export interface BuildResult {
  pages: number;
  assets: number;
  /** output files written (changed bytes) */
  written: number;
  /** stale output files removed */
  removed: number;
  /** names of the components the layouts referenced (the dev session watches these) */
  components: Set<string>;
  durationMs: number;
}

/** A parsed content file, kept between builds while its size and time are unchanged. */
interface CachedPage {
  mtimeMs: number;
  size: number;
  front: Record<string, unknown>;
  /** 1-based line of the `layout:` key (for an unknown-layout error), else 1 */
  layoutLine: number;
  html: string;
}

const BARE_LAYOUT: TemplateSource = {
  file: '(built-in layout)',
  text: '<!doctype html>\n<html>\n<head>\n<meta charset="utf-8">\n<title>{{ title }}</title>\n</head>\n<body>\n{{ content }}\n</body>\n</html>\n',
};

/** Files under `dir` (recursive), as paths relative to `dir` with `/` separators; [] if absent. */
export function listFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  const walk = (sub: string): void => {
    for (const e of readdirSync(join(dir, sub), { withFileTypes: true })) {
      const rel = sub ? `${sub}/${e.name}` : e.name;
      if (e.isDirectory()) walk(rel);
      else if (e.isFile()) out.push(rel);
    }
  };
  walk('');
  return out.sort();
}

/**
 * Splits front matter from a Markdown file and parses it.
 * @throws BuildError at the YAML error's line (counted in the whole file)
 */
export function parseFrontMatter(file: string, text: string): { front: Record<string, unknown>; body: string; layoutLine: number } {
  const m = /^---\r?\n/.exec(text);
  if (!m) return { front: {}, body: text, layoutLine: 1 };
  const rest = text.slice(m[0].length);
  const end = /^(?:---|\.\.\.)[ \t]*(?:\r?\n|$)/m.exec(rest);
  if (!end) throw new BuildError(file, 1, 'front matter is not closed (expected a line "---")');
  const yamlText = rest.slice(0, end.index);
  const doc = parseDocument(yamlText, { prettyErrors: true });
  if (doc.errors.length) {
    const e = doc.errors[0];
    const line = (e.linePos?.[0]?.line ?? 1) + 1; // +1 for the opening ---
    throw new BuildError(file, line, `invalid front matter: ${e.message.split('\n')[0]}`);
  }
  const value = doc.toJS() ?? {};
  if (typeof value !== 'object' || Array.isArray(value)) throw new BuildError(file, 2, 'front matter must be a mapping of keys to values');
  const front = value as Record<string, unknown>;
  const lineOfKey = (key: string): number => {
    const at = new RegExp(`^${key}\\s*:`, 'm').exec(yamlText);
    return at ? yamlText.slice(0, at.index).split('\n').length + 1 : 2;
  };
  for (const key of ['title', 'layout'] as const) {
    if (front[key] !== undefined && typeof front[key] !== 'string') throw new BuildError(file, lineOfKey(key), `front matter "${key}" must be a string`);
  }
  return { front, body: rest.slice(end.index + end[0].length), layoutLine: lineOfKey('layout') };
}

/** The output path of a content file: `a/b.md` → `a/b/index.html`, `a/index.md` → `a/index.html`. */
export function outputPathOf(rel: string): string {
  const noExt = rel.replace(/\.md$/i, '');
  const base = noExt.split('/').pop();
  return base === 'index' ? `${noExt}.html` : `${noExt}/index.html`;
}

/** Rewrites root-relative URLs in attributes to sit under `base` (a no-op for `/`). */
export function prefixUrls(html: string, base: string): string {
  if (base === '/') return html;
  return html.replace(/(\s(?:href|src|action|poster)\s*=\s*)(["'])\/(?!\/)/gi, (all, attr: string, quote: string, offset: number) => {
    const after = html.slice(offset + all.length, offset + all.length + base.length - 1);
    return after === base.slice(1) ? all : `${attr}${quote}${base}`;
  });
}

/** Inserts `snippet` before the last `</body>` (or at the end). */
export function injectSnippet(html: string, snippet: string): string {
  const at = html.toLowerCase().lastIndexOf('</body>');
  return at < 0 ? `${html}${snippet}` : `${html.slice(0, at)}${snippet}${html.slice(at)}`;
}

/** Builds one site repeatedly, reusing what did not change; see the module comment. */
export class SiteBuilder {
  private pages = new Map<string, CachedPage>();
  private written = new Map<string, string>();
  private markdown = new Marked({ gfm: true, async: false });
  /** components referenced by the latest build, failed or not */
  components = new Set<string>();

  constructor(private opts: BuildOptions) {}

  /** Changes the injected snippet (the next build rewrites every page). */
  setInject(inject: string | undefined): void {
    this.opts.inject = inject;
  }

  /**
   * Builds the site once.
   * @throws BuildError (file and line) for a bad source; other errors (I/O) as they are
   */
  async build(): Promise<BuildResult> {
    const started = performance.now();
    const { config, outDir } = this.opts;
    const log = this.opts.log ?? (() => {});
    const site = config.dir;
    const templates = new Templates(site);
    this.components = templates.used;
    const produced = new Set<string>();
    const owners = new Map<string, string>();
    let written = 0;
    mkdirSync(outDir, { recursive: true });

    const sources = listFiles(join(site, 'content')).filter((f) => f.toLowerCase().endsWith('.md'));
    const seen = new Set<string>();
    let n = 0;
    for (const rel of sources) {
      const file = `content/${rel}`;
      const abs = join(site, 'content', rel);
      seen.add(abs);
      const page = this.page(file, abs);
      const layoutName = typeof page.front.layout === 'string' ? page.front.layout : 'default';
      let layout = templates.layout(layoutName);
      if (!layout) {
        if (page.front.layout !== undefined) throw new BuildError(file, page.layoutLine, `unknown layout "${layoutName}" (expected layouts/${layoutName}.html)`);
        layout = BARE_LAYOUT;
      }
      let html = templates.render(layout, {
        content: page.html,
        title: typeof page.front.title === 'string' ? page.front.title : config.title,
        base: config.base,
        siteTitle: config.title,
        page: page.front,
      });
      html = prefixUrls(html, config.base);
      if (this.opts.inject) html = injectSnippet(html, this.opts.inject);
      const out = outputPathOf(rel);
      const owner = owners.get(out);
      if (owner) throw new BuildError(file, 1, `writes ${out}, which ${owner} writes too`);
      owners.set(out, file);
      produced.add(out);
      if (this.written.get(out) !== html) {
        const dest = join(outDir, out);
        mkdirSync(dirname(dest), { recursive: true });
        writeFileSync(dest, html);
        this.written.set(out, html);
        written++;
      }
      // let the control server answer between pages of a large site
      if (++n % 100 === 0) await new Promise((r) => setImmediate(r));
    }
    for (const key of this.pages.keys()) if (!seen.has(key)) this.pages.delete(key);

    const assets = listFiles(join(site, 'assets'));
    for (const rel of assets) {
      const out = `assets/${rel}`;
      if (owners.has(out)) throw new BuildError(`assets/${rel}`, 1, `writes ${out}, which ${owners.get(out)} writes too`);
      produced.add(out);
      const src = join(site, 'assets', rel);
      const dest = join(outDir, out);
      const st = statSync(src);
      const prev = existsSync(dest) ? statSync(dest) : null;
      if (!prev || prev.size !== st.size || Math.trunc(prev.mtimeMs) !== Math.trunc(st.mtimeMs)) {
        mkdirSync(dirname(dest), { recursive: true });
        copyFileSync(src, dest);
        utimesSync(dest, st.atime, st.mtime);
        written++;
      }
    }

    const removed = pruneTree(outDir, produced);
    for (const key of [...this.written.keys()]) if (!produced.has(key)) this.written.delete(key);
    const durationMs = Math.round(performance.now() - started);
    log(`built ${sources.length} page${sources.length === 1 ? '' : 's'} and ${assets.length} asset${assets.length === 1 ? '' : 's'} (${written} written, ${removed} removed) in ${durationMs} ms`);
    return { pages: sources.length, assets: assets.length, written, removed, components: templates.used, durationMs };
  }

  /** A content file parsed and rendered, from the cache when its size and time are unchanged. */
  private page(file: string, abs: string): CachedPage {
    const st = statSync(abs);
    const cached = this.pages.get(abs);
    if (cached && cached.mtimeMs === st.mtimeMs && cached.size === st.size) return cached;
    const text = readFileSync(abs, 'utf8');
    const { front, body, layoutLine } = parseFrontMatter(file, text);
    let html: string;
    try {
      html = this.markdown.parse(body) as string;
    } catch (err) {
      throw new BuildError(file, 1, `cannot render Markdown: ${err instanceof Error ? err.message : String(err)}`);
    }
    const page: CachedPage = { mtimeMs: st.mtimeMs, size: st.size, front, layoutLine, html };
    this.pages.set(abs, page);
    return page;
  }
}

/** Removes files under `root` not in `keep` (relative `/` paths), then empty folders; the count removed. */
export function pruneTree(root: string, keep: Set<string>): number {
  let removed = 0;
  const walk = (sub: string): boolean => {
    const dir = sub ? join(root, sub) : root;
    let empty = true;
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const rel = sub ? `${sub}/${e.name}` : e.name;
      if (e.isDirectory()) {
        if (walk(rel)) rmdirSync(join(root, rel));
        else empty = false;
      } else if (!keep.has(rel)) {
        unlinkSync(join(root, rel));
        removed++;
      } else empty = false;
    }
    return empty;
  };
  if (existsSync(root)) walk('');
  return removed;
}

/**
 * Mirrors `src` into `dest` (the staged served root of a prefixed site): copies files whose size
 * or time differ, removes files `src` no longer has. Returns the number of files copied.
 */
export function mirrorTree(src: string, dest: string): number {
  const files = listFiles(src);
  let copied = 0;
  for (const rel of files) {
    const from = join(src, ...rel.split('/'));
    const to = join(dest, ...rel.split('/'));
    const st = statSync(from);
    const prev = existsSync(to) ? statSync(to) : null;
    if (!prev || prev.size !== st.size || Math.trunc(prev.mtimeMs) !== Math.trunc(st.mtimeMs)) {
      mkdirSync(dirname(to), { recursive: true });
      copyFileSync(from, to);
      utimesSync(to, st.atime, st.mtime);
      copied++;
    }
  }
  mkdirSync(dest, { recursive: true });
  pruneTree(dest, new Set(files));
  return copied;
}

/** `abs` relative to `root` with `/` separators (for messages). */
export function relPath(root: string, abs: string): string {
  return relative(root, abs).split(sep).join('/');
}
