/**
 * Tokenizer for the filter grammar (docs/rules.md, "Filters").
 *
 * One left-to-right pass over the source with a single index, no regular expressions over the
 * input, so lexing is linear in the input length whatever the input. Positions in tokens and
 * error messages are 1-based character offsets into the source.
 */
import { ApiError } from '../errors/api-error.js';

/** Longest filter or rule source accepted, in UTF-16 code units. */
export const MAX_SOURCE_LENGTH = 8192;

export type TokenKind =
  | 'op' // = != > >= < <= ~ !~, and each after `?` (any-of: ?= ?!= …)
  | 'and' // &&
  | 'or' // ||
  | 'lparen'
  | 'rparen'
  | 'comma'
  | 'string'
  | 'number'
  | 'path' // identifiers joined by dots, e.g. author.name
  | 'macro' // @ followed by a dotted path, e.g. @request.auth.id
  | 'in'
  | 'true'
  | 'false'
  | 'null'
  | 'eof';

export interface Token {
  kind: TokenKind;
  /** Source text (for strings: the unescaped value; for macros: the text after `@`). */
  text: string;
  /** 1-based offset of the token's first character. */
  pos: number;
  /** A path's or macro's modifier, the name after `:` (`title:lower` → `lower`). */
  modifier?: string;
  /**
   * The alias of a `@collection.<name>:<alias>.<field>` macro (`text` is then
   * `collection.<name>.<field>`, without the alias): docs/rules.md, "Joining other collections".
   */
  alias?: string;
}

/** `Invalid filter: <detail>.` as a 400 `bad_request`. */
export function filterError(detail: string): ApiError {
  return ApiError.badRequest(`Invalid filter: ${detail}.`);
}

/** Quotes a piece of source for an error message, shortened so messages stay small. */
export function quoteSnippet(text: string): string {
  const short = text.length > 32 ? `${text.slice(0, 32)}…` : text;
  return JSON.stringify(short);
}

const ESCAPES = new Map<string, string>([
  ['\\', '\\'],
  ["'", "'"],
  ['"', '"'],
  ['n', '\n'],
  ['t', '\t'],
  ['r', '\r'],
]);
const KEYWORDS = new Set(['in', 'true', 'false', 'null']);
/** The any-of operators, longest first so `?!=` is not read as `?!` … */
const ANY_OF = ['?!=', '?!~', '?>=', '?<=', '?=', '?>', '?<', '?~'];

function isIdentStart(c: number): boolean {
  return (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95; // A-Z a-z _
}
function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}
function isIdentPart(c: number): boolean {
  return isIdentStart(c) || isDigit(c);
}
function isSpace(c: number): boolean {
  return c === 32 || c === 9 || c === 10 || c === 13;
}

/**
 * Splits `src` into tokens, ending with an `eof` token.
 * @throws ApiError 400 on overlong input, an unexpected character, a malformed number,
 *   an unterminated string or an unsupported escape.
 */
export function tokenize(src: string): Token[] {
  if (src.length > MAX_SOURCE_LENGTH) {
    throw filterError(`expression is too long (${src.length} characters, at most ${MAX_SOURCE_LENGTH})`);
  }
  const tokens: Token[] = [];
  let i = 0;
  const n = src.length;

  /** Reads identifiers joined by dots starting at `i` (which must be an identifier start). */
  const readPath = (): string => {
    const start = i;
    for (;;) {
      while (i < n && isIdentPart(src.charCodeAt(i))) i++;
      if (i < n && src.charCodeAt(i) === 46 /* . */) {
        if (i + 1 < n && isIdentStart(src.charCodeAt(i + 1))) {
          i++;
          continue;
        }
        throw filterError(`expected a field name after "." at position ${i + 2}`);
      }
      return src.slice(start, i);
    }
  };

  /** Reads `:name` after a path or macro into `tok.modifier`, if there is one. */
  const readModifier = (tok: Token): Token => {
    if (i < n && src.charCodeAt(i) === 58 /* : */) {
      if (!(i + 1 < n && isIdentStart(src.charCodeAt(i + 1)))) throw filterError(`expected a modifier name after ":" at position ${i + 2}`);
      i++;
      const start = i;
      while (i < n && isIdentPart(src.charCodeAt(i))) i++;
      tok.modifier = src.slice(start, i);
    }
    return tok;
  };

  /**
   * Reads `:<alias>.<field…>` after `@collection.<name>` (PocketBase's join alias) into
   * `tok.alias`, appending the field path to `tok.text`. A `:name` not followed by `.` is left
   * for readModifier (it is then a modifier, which the parser refuses without a field).
   */
  const readJoinAlias = (tok: Token): void => {
    if (!(i + 1 < n && src.charCodeAt(i) === 58 /* : */ && isIdentStart(src.charCodeAt(i + 1)))) return;
    let j = i + 1;
    while (j < n && isIdentPart(src.charCodeAt(j))) j++;
    if (!(j < n && src.charCodeAt(j) === 46 /* . */)) return;
    tok.alias = src.slice(i + 1, j);
    i = j + 1;
    if (!(i < n && isIdentStart(src.charCodeAt(i)))) throw filterError(`expected a field name after "." at position ${i + 1}`);
    tok.text += '.' + readPath();
  };

  while (i < n) {
    const c = src.charCodeAt(i);
    const pos = i + 1;
    if (isSpace(c)) {
      i++;
      continue;
    }
    const two = src.slice(i, i + 2);
    if (c === 63 /* ? */) {
      // an any-of operator: `?` then one of the comparison operators
      const op = ANY_OF.find((o) => src.startsWith(o, i));
      if (op === undefined) throw filterError(`expected a comparison operator after "?" at position ${pos}`);
      tokens.push({ kind: 'op', text: op, pos });
      i += op.length;
    } else if (two === '&&' || two === '||') {
      tokens.push({ kind: two === '&&' ? 'and' : 'or', text: two, pos });
      i += 2;
    } else if (two === '!=' || two === '>=' || two === '<=' || two === '!~') {
      tokens.push({ kind: 'op', text: two, pos });
      i += 2;
    } else if (c === 61 || c === 62 || c === 60 || c === 126) {
      tokens.push({ kind: 'op', text: src[i], pos }); // = > < ~
      i++;
    } else if (c === 40 || c === 41 || c === 44) {
      tokens.push({ kind: c === 40 ? 'lparen' : c === 41 ? 'rparen' : 'comma', text: src[i], pos });
      i++;
    } else if (c === 39 || c === 34) {
      tokens.push({ kind: 'string', text: readString(src, i), pos });
      i = skipString(src, i);
    } else if (isDigit(c) || (c === 45 && i + 1 < n && isDigit(src.charCodeAt(i + 1)))) {
      const start = i;
      if (c === 45) i++;
      while (i < n && isDigit(src.charCodeAt(i))) i++;
      if (i < n && src.charCodeAt(i) === 46) {
        i++;
        if (!(i < n && isDigit(src.charCodeAt(i)))) throw filterError(`malformed number at position ${pos}`);
        while (i < n && isDigit(src.charCodeAt(i))) i++;
      }
      if (i < n && (isIdentPart(src.charCodeAt(i)) || src.charCodeAt(i) === 46)) {
        throw filterError(`malformed number at position ${pos}`);
      }
      tokens.push({ kind: 'number', text: src.slice(start, i), pos });
    } else if (isIdentStart(c)) {
      const text = readPath();
      const kind = KEYWORDS.has(text) ? (text as TokenKind) : 'path';
      tokens.push(kind === 'path' ? readModifier({ kind, text, pos }) : { kind, text, pos });
    } else if (c === 64 /* @ */) {
      i++;
      if (!(i < n && isIdentStart(src.charCodeAt(i)))) throw filterError(`expected a macro name after "@" at position ${pos}`);
      const tok: Token = { kind: 'macro', text: readPath(), pos };
      if (tok.text.startsWith('collection.') && /^collection\.[A-Za-z_][A-Za-z0-9_]*$/.test(tok.text)) readJoinAlias(tok);
      tokens.push(readModifier(tok));
    } else {
      const ch = String.fromCodePoint(src.codePointAt(i) ?? c);
      throw filterError(`unexpected character ${quoteSnippet(ch)} at position ${pos}`);
    }
  }
  tokens.push({ kind: 'eof', text: '', pos: n + 1 });
  return tokens;
}

/** Index just past the closing quote of the string starting at `start` (already validated). */
function skipString(src: string, start: number): number {
  const quote = src.charCodeAt(start);
  let i = start + 1;
  while (src.charCodeAt(i) !== quote) i += src.charCodeAt(i) === 92 ? 2 : 1;
  return i + 1;
}

/** Unescaped value of the quoted string starting at `start`. */
function readString(src: string, start: number): string {
  const quote = src.charCodeAt(start);
  let out = '';
  let chunk = start + 1;
  let i = start + 1;
  for (;;) {
    if (i >= src.length) throw filterError(`unterminated string starting at position ${start + 1}`);
    const c = src.charCodeAt(i);
    if (c === quote) return out + src.slice(chunk, i);
    if (c === 92 /* \ */) {
      if (i + 1 >= src.length) throw filterError(`unterminated string starting at position ${start + 1}`);
      const next = src[i + 1];
      const mapped = ESCAPES.get(next);
      if (mapped === undefined) {
        const ch = String.fromCodePoint(src.codePointAt(i + 1) ?? 0);
        throw filterError(`unsupported escape ${quoteSnippet('\\' + ch)} at position ${i + 1}`);
      }
      out += src.slice(chunk, i) + mapped;
      i += 2;
      chunk = i;
    } else {
      i++;
    }
  }
}
