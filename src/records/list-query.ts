/**
 * A list request's query string, parsed once by the route layer (docs/api.md, "List records";
 * ARCHITECTURE.md, "A read": the domain never re-reads URLSearchParams). `expand` and `fields` are
 * parsed here; the paging values stay as written because which of them count, and how they are
 * checked, depends on the paging mode the lister picks (a cursor page ignores `page`).
 */
import { parseProjection, type Projection } from './projection.js';
import { parseExpand, type ExpandTree } from './expand.js';
import type { ReadShape } from './records-read.js';

export interface ListQuery {
  /** `filter`, trimmed ('' for none) */
  filter: string;
  /** `sort` as written, or null */
  sort: string | null;
  /** `search` (else `q`), trimmed ('' for none) */
  search: string;
  /** `vector`, trimmed ('' for none) */
  vector: string;
  expand: ExpandTree | null;
  projection: Projection | null;
  /** `expand` or `fields` was given (even blank): the page is not the plain rendering */
  shaped: boolean;
  /** raw paging values (null when absent); validated by the lister for its mode */
  page: string | null;
  perPage: string | null;
  limit: string | null;
  skipTotal: string | null;
  /** `cursor` as sent ('' asks for the first cursor page), or null when absent */
  cursor: string | null;
  /** the query string as received, part of the page cache's key */
  raw: string;
}

/** Parses a query string (without `?`) into a ListQuery. */
export function parseListQuery(raw: string): ListQuery {
  const qs = new URLSearchParams(raw);
  const expand = qs.get('expand');
  const fields = qs.get('fields');
  return {
    filter: (qs.get('filter') ?? '').trim(),
    sort: qs.get('sort'),
    search: (qs.get('search') ?? qs.get('q') ?? '').trim(),
    vector: (qs.get('vector') ?? '').trim(),
    expand: parseExpand(expand),
    projection: parseProjection(fields),
    shaped: !!expand || !!fields,
    page: qs.get('page'),
    perPage: qs.get('perPage'),
    limit: qs.get('limit'),
    skipTotal: qs.get('skipTotal'),
    cursor: qs.get('cursor'),
    raw,
  };
}

/** The read shape of a query string (view, create and update replies), parsed by the route layer. */
export function readShape(rawQuery: string): ReadShape {
  if (rawQuery === '') return { expand: null, projection: null };
  const qs = new URLSearchParams(rawQuery);
  return { expand: parseExpand(qs.get('expand')), projection: parseProjection(qs.get('fields')) };
}
