/**
 * Mail templates (2-uploads-and-mail.md, "Mail send API": templates; 0-conventions.md: 
 * `app.mail.render` and the package root's `renderTemplate`), on Mustache:
 * `{{ name }}` is interpolated HTML-escaped, `{{{ name }}}` raw, `{{> partial }}` includes a
 * named partial, a layout places the rendered template where it says `{{{ body }}}`. There are no
 * loops or conditionals: a section, an inverted section or a delimiter change is refused, as is a
 * partial that is not given or that includes itself. Text rendering (`html: false`) does not
 * escape. Parsed templates are cached by Mustache, so a template used again is not parsed again.
 */
import Mustache from 'mustache';

/** Why a template cannot be rendered. */
export class TemplateError extends Error {
  constructor(readonly code: 'TemplateSyntax' | 'UnsupportedTag' | 'UnknownPartial', message: string) {
    super(message);
    this.name = 'TemplateError';
  }
}

export interface RenderOptions {
  /** named partials for `{{> name }}` */
  partials?: Record<string, string>;
  /** a template that holds the result at `{{{ body }}}` */
  layout?: string;
  /** false: plain-text rendering, nothing escaped (default true: HTML-escaped `{{ }}`) */
  html?: boolean;
}

type Token = [string, string, number, number, Token[]?];

function tokens(template: string, what: string): Token[] {
  if (typeof template !== 'string') throw new TypeError(`${what}: a template must be a string`);
  try {
    return Mustache.parse(template) as unknown as Token[];
  } catch (err) {
    throw new TemplateError('TemplateSyntax', `${what}: ${(err as Error).message}`);
  }
}

/** Refuses what the syntax leaves out and partials that are missing or recursive. */
function check(template: string, what: string, partials: Record<string, string>, path: string[]): void {
  for (const t of tokens(template, what)) {
    const [kind, name] = t;
    if (kind === '#' || kind === '^') throw new TemplateError('UnsupportedTag', `${what}: {{${kind}${name}}}: templates have no loops or conditionals`);
    if (kind === '=') throw new TemplateError('UnsupportedTag', `${what}: changing delimiters is not supported`);
    if (kind === '>') {
      if (!Object.prototype.hasOwnProperty.call(partials, name)) throw new TemplateError('UnknownPartial', `${what}: no partial named ${JSON.stringify(name)}`);
      if (path.includes(name)) throw new TemplateError('UnknownPartial', `${what}: partial ${JSON.stringify(name)} includes itself (${[...path, name].join(' → ')})`);
      check(partials[name], `partial ${name}`, partials, [...path, name]);
    }
  }
}

const raw = (s: unknown) => String(s);

/**
 * Renders `template` with `vars` (and the partials and layout of `options`).
 * @throws TemplateError TemplateSyntax, UnsupportedTag or UnknownPartial; nothing is rendered
 */
export function renderTemplate(template: string, vars: Record<string, unknown> = {}, options: RenderOptions = {}): string {
  const partials = options.partials ?? {};
  check(template, 'template', partials, []);
  if (options.layout !== undefined) check(options.layout, 'layout', partials, []);
  const config = options.html === false ? { escape: raw } : undefined;
  const body = Mustache.render(template, vars, partials, config);
  if (options.layout === undefined) return body;
  return Mustache.render(options.layout, { ...vars, body }, partials, config);
}
