/**
 * The `filter` and `sort` of the request-log routes (docs/operations.md, "Request logs") turned
 * into SQL over the logs table of `<dataDir>/logs.db` (log-store.ts).
 *
 * The filter is parsed by the record lists' parser (src/rules/parser.ts, docs/rules.md
 * "Filters"), so the same grammar applies: `&&`, `||`, parentheses, `= != > >= < <= ~ !~`, `in`,
 * string, number, boolean and `null` literals. The fields are the log's own: `id`, `created`,
 * `level`, `message` and `data.<key>` (`data.method`, `data.status`, …, any key of the entry's
 * data). Macros (`@request.*`, `@now`), modifiers and the any-of operators (`?=`) do not apply to
 * logs and are refused. Every refusal is a 400 `bad_request` (`Invalid filter: …` or
 * `Invalid sort: …`), never a 500.
 */
import { parseFilter } from '../rules/parser.js';
import { filterError } from '../rules/lexer.js';
import { ApiError } from '../errors/api-error.js';
import type { Expr, Operand } from '../store/rule-types.js';

/** A bound SQL fragment: the text with `?` placeholders and its values in order. */
export interface SqlPart {
  sql: string;
  params: Array<string | number | null>;
}

/** The top-level columns a filter or sort may name; `data.<key>` reads the entry's JSON data. */
const COLUMNS: Record<string, string> = { id: 'id', created: 'created', level: 'level', message: 'message' };
/** A key under `data.`: letters, digits and `_` (it becomes a JSON path, so nothing else). */
const DATA_KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The SQL for a field path (`level`, `data.status`); undefined for any other name. */
function column(path: readonly string[]): string | undefined {
  if (path.length === 1) return COLUMNS[path[0]];
  if (path.length === 2 && path[0] === 'data' && DATA_KEY.test(path[1])) return `json_extract(data, '$.${path[1]}')`;
  return undefined;
}

function operand(o: Operand, params: SqlPart['params']): string {
  if (o.type === 'literal') {
    if (o.value === null) return 'NULL';
    params.push(typeof o.value === 'boolean' ? (o.value ? 1 : 0) : o.value);
    return '?';
  }
  if (o.type === 'macro') throw filterError(`macros such as @${o.macro === 'date' ? o.path : `request.${o.macro}`} do not apply to logs (position ${o.pos})`);
  if (o.modifier) throw filterError(`modifiers do not apply to logs (position ${o.pos})`);
  const c = column(o.path);
  if (!c) throw filterError(`unknown field ${JSON.stringify(o.path.join('.'))}: use id, created, level, message or data.<key> (position ${o.pos})`);
  return c;
}

/** `~` as PocketBase means it: a LIKE with `%` around the value unless it holds a `%` already. */
function likeOperand(o: Operand, params: SqlPart['params']): string {
  if (o.type === 'literal' && typeof o.value === 'string') {
    params.push(o.value.includes('%') ? o.value : `%${o.value.replace(/[\\_]/g, '\\$&')}%`);
    return `? ESCAPE '\\'`;
  }
  return operand(o, params);
}

function walk(e: Expr, params: SqlPart['params']): string {
  switch (e.type) {
    case 'and':
    case 'or':
      return `(${e.terms.map((t) => walk(t, params)).join(e.type === 'and' ? ' AND ' : ' OR ')})`;
    case 'in': {
      if (e.accountIds) throw filterError(`@request.account.ids does not apply to logs (position ${e.pos})`);
      const left = operand(e.left, params);
      if (e.items.length === 0) return '0';
      return `${left} IN (${e.items.map((i) => operand(i, params)).join(', ')})`;
    }
    case 'compare': {
      if (e.op.startsWith('?')) throw filterError(`the any-of operator ${e.op} does not apply to logs (position ${e.pos})`);
      if (e.op === '~' || e.op === '!~') {
        const left = operand(e.left, params);
        const right = likeOperand(e.right, params);
        return `${e.op === '~' ? '' : 'NOT '}(COALESCE(${left}, '') LIKE ${right})`;
      }
      const left = operand(e.left, params);
      const right = operand(e.right, params);
      // `= null` / `!= null` as PocketBase reads them: the value is (not) absent
      if (e.op === '=' || e.op === '!=') {
        const not = e.op === '!=';
        if (right === 'NULL' || left === 'NULL') return `${right === 'NULL' ? left : right} IS ${not ? 'NOT ' : ''}NULL`;
        return not ? `${left} IS NOT ${right}` : `${left} IS ${right}`;
      }
      return `${left} ${e.op} ${right}`;
    }
  }
}

/**
 * The WHERE condition of a filter (without `WHERE`); `{sql: '1', params: []}` for a blank one.
 * @throws ApiError 400 `Invalid filter: …` for a filter the grammar or the log fields refuse
 */
export function logFilterSql(filter: string | null | undefined): SqlPart {
  if (filter === null || filter === undefined || filter.trim() === '') return { sql: '1', params: [] };
  const params: SqlPart['params'] = [];
  const sql = walk(parseFilter(filter), params);
  return { sql, params };
}

/**
 * The ORDER BY terms of a sort (`-created,data.execTime`; `+` or no prefix ascending), always
 * ending with the insertion order as the tie-break, in the sort's last direction; newest first
 * when blank.
 * @throws ApiError 400 `Invalid sort: …` for a term that is not a log field
 */
export function logSortSql(sort: string | null | undefined): string {
  const terms: string[] = [];
  let last = 'DESC';
  for (const raw of (sort ?? '').split(',')) {
    const t = raw.trim();
    if (t === '') continue;
    const desc = t.startsWith('-');
    const name = t.replace(/^[+-]/, '');
    const c = column(name.split('.'));
    if (!c) throw ApiError.badRequest(`Invalid sort: unknown field ${JSON.stringify(name.slice(0, 64))}: use id, created, level, message or data.<key>.`);
    last = desc ? 'DESC' : 'ASC';
    terms.push(`${c} ${last}`);
  }
  if (terms.length === 0) terms.push('seq DESC');
  else terms.push(`seq ${last}`);
  return terms.join(', ');
}
