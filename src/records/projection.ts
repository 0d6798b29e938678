/**
 * The `fields` projection (docs/api.md, "List records": `fields`): comma-separated dot paths, `*`
 * for every key at a level, a leading `-` removes a path after the includes (`-x` alone means
 * everything except x). Paths descend into `expand` blocks and into each element of arrays. Unknown
 * include paths are ignored. Applied last, after expand, rule checks and stripping.
 */
export interface Projection {
  includes: string[][];
  excludes: string[][];
}

const MAX_PATHS = 100;

/** Parses the `fields` parameter; null when it selects everything. */
export function parseProjection(src: string | null): Projection | null {
  if (src === null) return null;
  const includes: string[][] = [];
  const excludes: string[][] = [];
  for (const raw of src.split(',').slice(0, MAX_PATHS)) {
    const s = raw.trim();
    if (!s) continue;
    if (s.startsWith('-')) {
      const p = s.slice(1).trim();
      if (p) excludes.push(p.split('.'));
    } else includes.push(s.split('.'));
  }
  if (includes.length === 0 && excludes.length === 0) return null;
  if (includes.length === 0) includes.push(['*']);
  return { includes, excludes };
}

/** Returns a projected copy of `obj` (never mutates it). */
export function project(obj: Record<string, unknown>, p: Projection): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const path of p.includes) include(obj, out, path, 0);
  for (const path of p.excludes) exclude(out, path, 0);
  return out;
}

function isPlain(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function include(src: Record<string, unknown>, dst: Record<string, unknown>, path: string[], i: number): void {
  const key = path[i];
  const last = i === path.length - 1;
  const keys = key === '*' ? Object.keys(src) : Object.prototype.hasOwnProperty.call(src, key) ? [key] : [];
  for (const k of keys) {
    const v = src[k];
    if (last) {
      dst[k] = v;
      continue;
    }
    if (Array.isArray(v)) {
      const prev = Array.isArray(dst[k]) ? (dst[k] as unknown[]) : v.map(() => ({}));
      dst[k] = v.map((el, j) => {
        if (!isPlain(el)) return el;
        const target = isPlain(prev[j]) ? (prev[j] as Record<string, unknown>) : {};
        include(el, target, path, i + 1);
        return target;
      });
    } else if (isPlain(v)) {
      const target = isPlain(dst[k]) && dst[k] !== v ? (dst[k] as Record<string, unknown>) : {};
      include(v, target, path, i + 1);
      dst[k] = target;
    }
  }
}

function exclude(obj: Record<string, unknown>, path: string[], i: number): void {
  const key = path[i];
  if (i === path.length - 1) {
    if (key === '*') for (const k of Object.keys(obj)) delete obj[k];
    else delete obj[key];
    return;
  }
  const keys = key === '*' ? Object.keys(obj) : [key];
  for (const k of keys) {
    const v = obj[k];
    if (Array.isArray(v)) {
      obj[k] = v.map((el) => {
        if (!isPlain(el)) return el;
        const copy = { ...el };
        exclude(copy, path, i + 1);
        return copy;
      });
    } else if (isPlain(v)) {
      const copy = { ...v };
      exclude(copy, path, i + 1);
      obj[k] = copy;
    }
  }
}
