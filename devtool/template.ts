/**
 * Layouts and components (docs/devtool.md): HTML files with
 * placeholders.
 *
 * - `{{ content }}`: the page's rendered Markdown (inserted as is).
 * - `{{ title }}`: the page's front matter `title` (HTML-escaped); `{{ site.title }}` the site's;
 *   `{{ base }}` the URL prefix (`/` or `/docs/`); `{{ page.KEY }}` or `{{ KEY }}`: any other
 *   scalar front matter value (escaped).
 * - `{{> name }}`: the component `components/name.html`, rendered with the same values; components
 *   may include components (a cycle is an error).
 *
 * An unknown placeholder, a missing component, a cycle or an unclosed `{{` is a BuildError naming
 * the template file and line.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BuildError, lineAt } from './errors.js';

/** One template's text and its path relative to the site (for error messages). */
export interface TemplateSource {
  file: string;
  text: string;
}

/** The values a template may name. */
export interface TemplateValues {
  content: string;
  title: string;
  base: string;
  siteTitle: string;
  /** the page's front matter */
  page: Record<string, unknown>;
}

const escapeHtml = (s: string): string =>
  s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');

/** Layouts and components of one build, read once each; records which components were used. */
export class Templates {
  private layouts = new Map<string, TemplateSource | null>();
  private components = new Map<string, TemplateSource | null>();
  /** component names referenced during this build (the dev session watches only these) */
  readonly used = new Set<string>();

  constructor(private siteDir: string) {}

  private load(cache: Map<string, TemplateSource | null>, folder: string, name: string): TemplateSource | null {
    if (!cache.has(name)) {
      const file = join(folder, `${name}.html`);
      const abs = join(this.siteDir, file);
      cache.set(name, /^[\w.-]+$/.test(name) && existsSync(abs) ? { file, text: readFileSync(abs, 'utf8') } : null);
    }
    return cache.get(name)!;
  }

  /** `layouts/<name>.html`, or null when there is none. */
  layout(name: string): TemplateSource | null {
    return this.load(this.layouts, 'layouts', name);
  }

  /** `components/<name>.html`, or null when there is none. */
  component(name: string): TemplateSource | null {
    return this.load(this.components, 'components', name);
  }

  /**
   * Renders `src` with `values`.
   * @throws BuildError for an unknown placeholder or component, a cycle, an unclosed `{{`
   */
  render(src: TemplateSource, values: TemplateValues, stack: string[] = []): string {
    const { text } = src;
    let out = '';
    let at = 0;
    for (;;) {
      const open = text.indexOf('{{', at);
      if (open < 0) {
        out += text.slice(at);
        return out;
      }
      const close = text.indexOf('}}', open + 2);
      if (close < 0) throw new BuildError(src.file, lineAt(text, open), 'unclosed "{{" (expected "}}")');
      out += text.slice(at, open);
      const inner = text.slice(open + 2, close).trim();
      at = close + 2;
      if (inner.startsWith('>')) {
        const name = inner.slice(1).trim();
        // recorded before the check: a dev session then also watches a component not yet written
        this.used.add(name);
        const component = this.component(name);
        if (!component) throw new BuildError(src.file, lineAt(text, open), `unknown component "${name}" (expected components/${name}.html)`);
        if (stack.includes(name)) throw new BuildError(src.file, lineAt(text, open), `component cycle: ${[...stack, name].join(' > ')}`);
        out += this.render(component, values, [...stack, name]);
        continue;
      }
      out += this.value(inner, values, src, open);
    }
  }

  private value(name: string, v: TemplateValues, src: TemplateSource, offset: number): string {
    switch (name) {
      case 'content': return v.content;
      case 'title': return escapeHtml(v.title);
      case 'base': return v.base;
      case 'site.title': return escapeHtml(v.siteTitle);
    }
    const key = name.startsWith('page.') ? name.slice(5) : name;
    const value = Object.prototype.hasOwnProperty.call(v.page, key) ? v.page[key] : undefined;
    if (value === undefined || (value !== null && typeof value === 'object')) {
      if (name.startsWith('page.') && value === undefined) return '';
      throw new BuildError(src.file, lineAt(src.text, offset), `unknown placeholder "{{ ${name} }}" (known: content, title, base, site.title, page.<front matter key>, > component)`);
    }
    return escapeHtml(value === null ? '' : String(value));
  }
}
