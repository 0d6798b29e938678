/**
 * Recursive-descent parser for the filter grammar (docs/rules.md, "Filters"), shared by the list
 * `filter` parameter, access rules and realtime subscription filters.
 *
 *   expr    := and ( "||" and )*
 *   and     := primary ( "&&" primary )*
 *   primary := "(" expr ")" | operand OP operand | operand "in" list   (OP: = != > … or ?= ?!= … )
 *   list    := "(" [ literal ( "," literal )* ] ")" | @request.account.ids
 *   operand := path [ ":" modifier ] | macro [ ":" modifier ] | string | number | true | false | null
 *   path    := segment ( "." segment )*        (a segment `<collection>_via_<field>` is a back-relation)
 *   macro   := "@request." … | "@collection." name [ ":" alias ] "." path | datetime macro
 *
 * `@public` is not part of the grammar; callers recognise it before parsing. Hostile input is
 * bounded: at most MAX_SOURCE_LENGTH characters, MAX_DEPTH nested parentheses and MAX_TERMS
 * comparisons plus list items. Parsed trees are cached by source text and shared, so callers
 * must treat them as read-only.
 */
import { filterError, quoteSnippet, tokenize, type Token } from './lexer.js';
import { boundedCache } from '../cache/bounded.js';
import { isDateMacro } from './datetime.js';
import type { AnyOfOp, FieldOperand, CompareOp, Expr, FieldModifier, InExpr, Literal, MacroModifier, MacroOperand, Operand } from '../store/rule-types.js';

export const MAX_DEPTH = 64;
export const MAX_TERMS = 1000;
const CACHE_SIZE = 1000;

const cache = boundedCache<string, Expr>(CACHE_SIZE);

/** The parse cache's look-ups that found the expression, and those that parsed it, since start (the metrics: docs/operations.md, "Metrics"). */
export const parseCacheStats = { hits: 0, misses: 0 };

/**
 * Parses a filter or rule expression, memoised in a bounded least-recently-used cache.
 * @throws ApiError 400 `bad_request` (`Invalid filter: …`) naming the offending token/position.
 */
export function parseFilter(src: string): Expr {
  const hit = cache.get(src);
  if (hit !== undefined) {
    parseCacheStats.hits++;
    return hit;
  }
  parseCacheStats.misses++;
  const expr = new Parser(tokenize(src)).parseAll();
  cache.set(src, expr);
  return expr;
}

function describe(tok: Token): string {
  if (tok.kind === 'eof') return `unexpected end of expression at position ${tok.pos}`;
  const text = tok.kind === 'string' ? JSON.stringify(tok.text) : tok.kind === 'macro' ? `@${tok.text}` : tok.text;
  return `unexpected token ${quoteSnippet(text)} at position ${tok.pos}`;
}

class Parser {
  private i = 0;
  private depth = 0;
  private terms = 0;
  constructor(private readonly tokens: Token[]) {}

  parseAll(): Expr {
    if (this.peek().kind === 'eof') throw filterError('empty expression');
    const expr = this.parseOr();
    if (this.peek().kind !== 'eof') throw filterError(describe(this.peek()));
    return expr;
  }

  private peek(): Token {
    return this.tokens[this.i];
  }
  private next(): Token {
    const tok = this.tokens[this.i];
    if (tok.kind !== 'eof') this.i++;
    return tok;
  }
  private countTerm(pos: number): void {
    if (++this.terms > MAX_TERMS) throw filterError(`too many terms (more than ${MAX_TERMS}) at position ${pos}`);
  }

  private parseOr(): Expr {
    const terms = [this.parseAnd()];
    while (this.peek().kind === 'or') {
      this.next();
      terms.push(this.parseAnd());
    }
    return terms.length === 1 ? terms[0] : { type: 'or', terms };
  }

  private parseAnd(): Expr {
    const terms = [this.parsePrimary()];
    while (this.peek().kind === 'and') {
      this.next();
      terms.push(this.parsePrimary());
    }
    return terms.length === 1 ? terms[0] : { type: 'and', terms };
  }

  private parsePrimary(): Expr {
    const tok = this.peek();
    if (tok.kind === 'lparen') {
      this.next();
      if (++this.depth > MAX_DEPTH) {
        throw filterError(`expression is nested too deeply (more than ${MAX_DEPTH} levels) at position ${tok.pos}`);
      }
      const inner = this.parseOr();
      const close = this.next();
      if (close.kind !== 'rparen') throw filterError(`${describe(close)}; expected ")" to close "(" at position ${tok.pos}`);
      this.depth--;
      return inner;
    }
    const left = this.parseOperand();
    const op = this.next();
    if (op.kind === 'in') return this.parseIn(left, op.pos);
    if (op.kind !== 'op') throw filterError(`${describe(op)}; expected a comparison operator`);
    this.countTerm(op.pos);
    return { type: 'compare', op: op.text as CompareOp | AnyOfOp, left, right: this.parseOperand(), pos: op.pos };
  }

  private parseIn(left: Operand, pos: number): InExpr {
    this.countTerm(pos);
    const open = this.next();
    if (open.kind === 'macro' && open.text === 'request.account.ids') {
      return { type: 'in', left, items: [], accountIds: true, pos };
    }
    if (open.kind !== 'lparen') throw filterError(`${describe(open)}; expected "(" or @request.account.ids after "in"`);
    const items: Literal[] = [];
    if (this.peek().kind === 'rparen') {
      this.next();
      return { type: 'in', left, items, accountIds: false, pos };
    }
    for (;;) {
      const item = this.parseOperand();
      if (item.type !== 'literal') {
        throw filterError(`the list after "in" may only hold literals (position ${item.pos})`);
      }
      this.countTerm(item.pos);
      items.push(item);
      const sep = this.next();
      if (sep.kind === 'rparen') return { type: 'in', left, items, accountIds: false, pos };
      if (sep.kind !== 'comma') throw filterError(`${describe(sep)}; expected "," or ")" in the "in" list`);
    }
  }

  private parseOperand(): Operand {
    const tok = this.next();
    const pos = tok.pos;
    switch (tok.kind) {
      case 'string':
      case 'number':
        return literalToken(tok);
      case 'true':
      case 'false':
        return { type: 'literal', value: tok.kind === 'true', raw: '', pos };
      case 'null':
        return { type: 'literal', value: null, raw: '', pos };
      case 'path': {
        const path = tok.text.split('.');
        if (path[0] === 'in') throw filterError(`"in" is reserved and cannot be a field name (position ${pos})`);
        if (tok.modifier === undefined) return { type: 'field', path, pos };
        return { type: 'field', path, modifier: fieldModifier(tok), pos };
      }
      case 'macro': {
        if (tok.text.startsWith('collection.')) return joinOperand(tok);
        const macro = parseMacro(tok);
        if (tok.modifier !== undefined) macro.modifier = macroModifier(tok, macro);
        return macro;
      }
      case 'in':
        throw filterError(`"in" is reserved and cannot be a field name (position ${pos})`);
      default:
        throw filterError(describe(tok));
    }
  }
}

/**
 * The literal of a `string` or `number` token (a number keeps its source text in `raw`).
 * @throws ApiError 400 `bad_request` for a number beyond the double range
 */
export function literalToken(tok: Token): Literal {
  const pos = tok.pos;
  if (tok.kind === 'string') return { type: 'literal', value: tok.text, raw: '', pos };
  const value = Number(tok.text);
  if (!Number.isFinite(value)) throw filterError(`number out of range at position ${pos}`);
  return { type: 'literal', value, raw: tok.text, pos };
}

const FIELD_MODIFIERS: ReadonlySet<string> = new Set<FieldModifier>(['lower', 'length', 'each']);
const MACRO_MODIFIERS: ReadonlySet<string> = new Set<MacroModifier>(['lower', 'isset', 'length', 'changed']);

function unknownModifier(tok: Token): never {
  throw filterError(`unknown modifier ${quoteSnippet(':' + tok.modifier)} at position ${tok.pos}`);
}
function misplacedModifier(tok: Token, shown: string, why: string): never {
  throw filterError(`the modifier ${quoteSnippet(':' + tok.modifier)} cannot apply to ${quoteSnippet(shown)} (position ${tok.pos}): ${why}`);
}

/** A field path's modifier (which fields may take it is checked against the schema when compiling). */
function fieldModifier(tok: Token): FieldModifier {
  const m = tok.modifier!;
  if (FIELD_MODIFIERS.has(m)) return m as FieldModifier;
  if (MACRO_MODIFIERS.has(m)) misplacedModifier(tok, tok.text, 'it applies to @request.* values');
  return unknownModifier(tok);
}

/**
 * A request macro's modifier: `:lower` on any text macro, `:isset` on the body, query and headers,
 * `:length` and `:changed` on the body (`:changed` on a field name only).
 */
function macroModifier(tok: Token, macro: MacroOperand): MacroModifier {
  const m = tok.modifier!;
  const shown = '@' + tok.text;
  if (m === 'each' && macro.macro === 'data') misplacedModifier(tok, shown, 'svc does not support it on request values');
  if (!MACRO_MODIFIERS.has(m)) {
    if (FIELD_MODIFIERS.has(m)) misplacedModifier(tok, shown, 'it applies to fields');
    unknownModifier(tok);
  }
  const body = macro.macro === 'data';
  const ok =
    m === 'lower' ? macro.macro !== 'date' && macro.macro !== 'account.id' && macro.macro !== 'account.role'
    : m === 'isset' ? body || macro.macro === 'query' || macro.macro === 'headers'
    : m === 'changed' ? body && !macro.path.includes('.')
    : body;
  if (!ok) misplacedModifier(tok, shown, m === 'changed' ? 'it applies to @request.body.<field>' : m === 'isset' ? 'it applies to @request.body, .query and .headers' : m === 'length' ? 'it applies to @request.body values' : 'it applies to text values');
  return m as MacroModifier;
}

/**
 * `@collection.<name>[:<alias>].<field…>[:modifier]` (docs/rules.md, "Joining other
 * collections"): a field operand over a row of the collection `<name>`.
 */
function joinOperand(tok: Token): FieldOperand {
  const [, collection, ...path] = tok.text.split('.');
  if (path.length === 0) throw filterError(`${quoteSnippet('@' + tok.text)} names no field (position ${tok.pos}); write @collection.<name>.<field>`);
  const alias = tok.alias ?? collection;
  const out: FieldOperand = { type: 'field', path, join: { collection, alias, key: `${collection.toLowerCase()}:${alias}` }, pos: tok.pos };
  if (tok.modifier !== undefined) out.modifier = fieldModifier(tok);
  return out;
}

function parseMacro(tok: Token): MacroOperand {
  const { text, pos } = tok;
  const make = (macro: MacroOperand['macro'], path = ''): MacroOperand => ({ type: 'macro', macro, path, pos });
  if (isDateMacro(text)) return make('date', text);
  if (text === 'request.method') return make('method');
  if (text === 'request.account.id') return make('account.id');
  if (text === 'request.account.role') return make('account.role');
  if (text === 'request.account.ids') {
    throw filterError(`@request.account.ids is a list and may only follow "in" (position ${pos})`);
  }
  if (text === 'request.context') return make('context');
  // `@request.body.*` is PocketBase's name for `@request.data.*`
  for (const [name, source] of [['auth', 'auth'], ['data', 'data'], ['body', 'data'], ['query', 'query'], ['headers', 'headers']] as const) {
    const prefix = `request.${name}.`;
    if (!text.startsWith(prefix)) continue;
    const path = text.slice(prefix.length);
    // a header is one name (`x_token`: lower case, `-` written `_`), as PocketBase spells it
    if (source === 'headers' && path.includes('.')) break;
    return make(source, path);
  }
  throw filterError(`unknown macro ${quoteSnippet('@' + text)} at position ${pos}`);
}
