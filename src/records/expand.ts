/** The `expand` parameter (docs/api.md, "List records"; docs/rules.md on hidden relations). */

/** Relations at most one expand path follows. */
export const MAX_EXPAND_DEPTH = 6;

export type ExpandTree = Map<string, ExpandTree>;

/** Parses `expand=a,a.b,c` into a tree (depth ≤ 6; blank segments ignored). */
export function parseExpand(src: string | null): ExpandTree | null {
  if (!src) return null;
  const root: ExpandTree = new Map();
  for (const path of src.split(',').slice(0, 50)) {
    let node = root;
    for (const seg of path.trim().split('.').slice(0, MAX_EXPAND_DEPTH)) {
      if (!seg) break;
      let next = node.get(seg);
      if (!next) node.set(seg, (next = new Map()));
      node = next;
    }
  }
  return root.size ? root : null;
}
