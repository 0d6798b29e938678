/**
 * A collection's API view (docs/admin.md, "API"): its record routes as the server's OpenAPI
 * document describes them (`GET /api/openapi.json`, docs/api.md "OpenAPI document"): method,
 * path, who may call it with the collection's rule, the body's fields, and a curl example to
 * copy. Read from the document, so it shows what the server serves, not what this page assumes.
 */
import { useEffect, useState } from 'preact/hooks';
import { api, errorMessage } from '../api';
import { href, linkClick } from '../router';
import type { Collection } from '../types';
import { Alert, Loading } from './ui';

type Json = Record<string, any>;

/** One operation of the document tagged with the collection. */
interface Operation {
  method: string;
  path: string;
  summary: string;
  who: string;
  /** the rule's text; null: superusers only; undefined: not a rule-governed route */
  rule: string | null | undefined;
  /** the JSON body's schema, resolved; null without a body */
  body: Json | null;
  multipart: boolean;
}

const METHOD_ORDER = ['get', 'post', 'patch', 'put', 'delete'];

/** `#/components/schemas/X` → the schema. */
function resolve(doc: Json, schema: Json | undefined): Json | null {
  if (!schema) return null;
  if (typeof schema.$ref === 'string') return doc.components?.schemas?.[schema.$ref.split('/').pop()!] ?? null;
  return schema;
}

/** The operations of `collection` in the document, in path then method order. */
export function collectionOperations(doc: Json, collection: string): Operation[] {
  const out: Operation[] = [];
  for (const [path, item] of Object.entries<Json>(doc.paths ?? {})) {
    for (const method of METHOD_ORDER) {
      const op = item[method];
      if (!op || !op.tags?.includes(collection)) continue;
      const content = op.requestBody?.content ?? {};
      out.push({
        method, path, summary: op.summary ?? '', who: String(op.description ?? '').replace(/^Who: /, '').replace(/\.$/, ''),
        rule: op['x-svc-rule'], body: resolve(doc, content['application/json']?.schema), multipart: !!content['multipart/form-data'],
      });
    }
  }
  return out;
}

/** An example value of a property schema (a select's first value, a string's kind). */
function example(name: string, s: Json): unknown {
  const types: string[] = Array.isArray(s.type) ? s.type : [s.type];
  if (Array.isArray(s.enum)) return s.enum.find((v: unknown) => v !== null) ?? null;
  if (types.includes('array')) return [example(name, s.items ?? {})];
  if (types.includes('boolean')) return true;
  if (types.includes('number')) return 1;
  if (typeof s.pattern === 'string' && s.pattern.includes('{15}')) return 'RECORD_ID';
  if (types.includes('string')) return name === 'email' ? 'someone@example.com' : name.startsWith('password') ? 'a long password' : '…';
  return {};
}

/** A body with the required fields (or, with none required, the first few) filled with examples. */
function exampleBody(body: Json): Json {
  const props: Record<string, Json> = body.properties ?? {};
  const required: string[] = body.required ?? [];
  const names = required.length ? required : Object.keys(props).filter((n) => n !== 'id').slice(0, 2);
  const out: Json = {};
  for (const n of names) if (props[n]) out[n] = example(n, props[n]);
  return out;
}

const shellQuote = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;

/** The curl command for an operation, against this page's origin, with a superuser's token in $TOKEN. */
export function curlExample(op: Operation, origin: string): string {
  const url = `${origin}${op.path.replace('{id}', 'RECORD_ID')}`;
  const parts = ['curl -s'];
  if (op.method !== 'get') parts.push(`-X ${op.method.toUpperCase()}`);
  parts.push(`"${url}"`, '-H "Authorization: Bearer $TOKEN"');
  if (op.body) parts.push("-H 'content-type: application/json'", `-d ${shellQuote(JSON.stringify(exampleBody(op.body)))}`);
  return parts.join(' ');
}

function RuleText({ op }: { op: Operation }) {
  if (op.rule === undefined) return <span>{op.who}</span>;
  if (op.rule === null || op.rule.trim() === '') return <span>Superusers only</span>;
  if (op.rule.trim() === '@public') return <span>Anyone (<code>@public</code>)</span>;
  return <code class="api-rule">{op.rule}</code>;
}

export function ApiPage({ collection }: { collection: Collection }) {
  const [doc, setDoc] = useState<Json | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    const ctl = new AbortController();
    api<Json>('GET', '/api/openapi.json', { signal: ctl.signal }).then(setDoc, (err) => {
      if ((err as Error).name !== 'AbortError') setError(errorMessage(err));
    });
    return () => ctl.abort();
  }, [collection.id, collection.updated]);
  const ops = doc ? collectionOperations(doc, collection.name) : [];
  const recordsLink = `/collections/${encodeURIComponent(collection.name)}`;
  return (
    <main class="page api-page" id="main">
      <header class="page-head">
        <div>
          <h1>
            {collection.name} <span class="muted">API</span>
          </h1>
          <p class="muted page-sub">
            <span>
              The record routes of this collection, from the server's <a href="/api/openapi.json">OpenAPI document</a>. Examples use a superuser token in <code>$TOKEN</code>.
            </span>
          </p>
        </div>
        <div class="page-actions">
          <a class="btn" href={href(recordsLink)} onClick={(e) => linkClick(e, recordsLink)}>Records</a>
        </div>
      </header>
      <Alert message={error} />
      {!doc && !error && <Loading label="Loading the API description…" />}
      {doc && (
        <ul class="api-ops">
          {ops.map((op) => (
            <li class="card api-op" key={`${op.method} ${op.path}`} aria-label={`${op.method.toUpperCase()} ${op.path}`}>
              <h2 class="api-op-head">
                <span class={`badge api-method api-method-${op.method}`}>{op.method.toUpperCase()}</span>
                <code class="api-path">{op.path}</code>
              </h2>
              <p>{op.summary}</p>
              <dl class="api-facts">
                <dt>Who</dt>
                <dd class="api-who"><RuleText op={op} /></dd>
                {op.body && (
                  <>
                    <dt>Body</dt>
                    <dd class="api-body">
                      {Object.keys(op.body.properties ?? {}).map((n, i) => (
                        <span key={n}>
                          {i > 0 && ', '}
                          <code>{n}</code>
                          {(op.body!.required ?? []).includes(n) && <span class="muted"> (required)</span>}
                        </span>
                      ))}
                      {op.multipart && <span class="muted"> — JSON, or a multipart form with files</span>}
                    </dd>
                  </>
                )}
              </dl>
              <pre class="api-curl" tabIndex={0} aria-label={`curl example for ${op.method.toUpperCase()} ${op.path}`}><code>{curlExample(op, location.origin)}</code></pre>
            </li>
          ))}
        </ul>
      )}
    </main>
  );
}
