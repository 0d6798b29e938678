/**
 * Mail templates (docs/framework.md, "Mail": named templates,
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
  constructor(readonly code: 'TemplateSyntax' | 'UnsupportedTag' | 'UnknownPartial' | 'UnknownTemplate', message: string) {
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

/** A named mail template: the subject and the bodies, each in the template syntax. */
export interface MailTemplate {
  subject: string;
  text?: string;
  html?: string;
}

/** The mail group's templates, checked once and rendered by name. */
export interface TemplateSet {
  templates?: Record<string, MailTemplate>;
  partials?: Record<string, string>;
  /** an HTML layout every HTML body is placed in (`{{{ body }}}`) */
  layout?: string;
}

/**
 * Every problem of a template set, one line each (for defineApp: templates are checked before
 * the server starts): bad shapes, syntax, loops or conditionals, unknown or recursive partials.
 */
export function templateProblems(set: TemplateSet): string[] {
  const out: string[] = [];
  const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
  const partials = set.partials ?? {};
  if (set.partials !== undefined && (!isObj(set.partials) || !Object.values(set.partials).every((v) => typeof v === 'string'))) return ['mail.partials: must be an object of name → template text'];
  const tryCheck = (text: unknown, what: string) => {
    if (typeof text !== 'string') return void out.push(`${what}: must be a string`);
    try {
      check(text, what, partials, []);
    } catch (err) {
      out.push(err instanceof TemplateError ? err.message : String(err));
    }
  };
  if (set.layout !== undefined) tryCheck(set.layout, 'mail.layout');
  for (const [name, p] of Object.entries(partials)) tryCheck(p, `mail.partials.${name}`);
  if (set.templates === undefined) return out;
  if (!isObj(set.templates)) return [...out, 'mail.templates: must be an object of name → {subject, text?, html?}'];
  for (const [name, t] of Object.entries(set.templates)) {
    const at = `mail.templates.${name}`;
    if (!isObj(t)) { out.push(`${at}: must be {subject, text?, html?}`); continue; }
    for (const k of Object.keys(t)) if (!['subject', 'text', 'html'].includes(k)) out.push(`${at}.${k}: unknown key (subject, text, html)`);
    tryCheck(t.subject, `${at}.subject`);
    if (t.text === undefined && t.html === undefined) out.push(`${at}: needs a text or an html body`);
    if (t.text !== undefined) tryCheck(t.text, `${at}.text`);
    if (t.html !== undefined) tryCheck(t.html, `${at}.html`);
  }
  return out;
}

/**
 * Renders the named template with `vars`: the subject and the text as plain text (not escaped),
 * the HTML escaped and in the layout. Spread it into a message:
 * `app.mail.send({ to, ...app.mail.template('welcome', { name }) })`.
 * @throws TemplateError UnknownTemplate for a name the set does not have
 */
export function renderNamed(set: TemplateSet, name: string, vars: Record<string, unknown> = {}): { subject: string; text?: string; html?: string } {
  const t = set.templates && Object.prototype.hasOwnProperty.call(set.templates, name) ? set.templates[name] : undefined;
  if (!t) throw new TemplateError('UnknownTemplate', `no mail template named ${JSON.stringify(name)}`);
  const partials = set.partials ?? {};
  const out: { subject: string; text?: string; html?: string } = { subject: renderTemplate(t.subject, vars, { partials, html: false }) };
  if (t.text !== undefined) out.text = renderTemplate(t.text, vars, { partials, html: false });
  if (t.html !== undefined) out.html = renderTemplate(t.html, vars, { partials, layout: set.layout });
  return out;
}
