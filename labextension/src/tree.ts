/**
 * The session tree: building it from a flat list, filtering, flattening it into the rows of a
 * virtualised list. Pure (unit tested in node: labextension/test/tree.spec.ts).
 */
import { Session, SESSION_STATES, SessionState } from './protocol';

/** What the tree needs of a session. */
export type TreeSession = Pick<
  Session,
  'id' | 'parent_id' | 'created' | 'state' | 'name' | 'prompt' | 'model'
>;

export interface ITreeNode<S extends TreeSession = Session> {
  session: S;
  children: ITreeNode<S>[];
  depth: number;
}

function byCreated(a: TreeSession, b: TreeSession): number {
  return (a.created ?? 0) - (b.created ?? 0) || a.id.localeCompare(b.id);
}

/**
 * Build the session forest from a flat list. Roots are sessions without a
 * parent, or whose parent is not in the list (orphans). Roots are sorted
 * newest first; children oldest first (spawn order). Cycles are broken.
 */
export function buildTree<S extends TreeSession>(sessions: Iterable<S>): ITreeNode<S>[] {
  const byId = new Map<string, S>();
  for (const s of sessions) {
    byId.set(s.id, s);
  }
  const childrenOf = new Map<string, S[]>();
  const roots: S[] = [];
  for (const s of byId.values()) {
    const pid = s.parent_id;
    if (pid && pid !== s.id && byId.has(pid)) {
      let list = childrenOf.get(pid);
      if (!list) {
        list = [];
        childrenOf.set(pid, list);
      }
      list.push(s);
    } else {
      roots.push(s);
    }
  }
  const seen = new Set<string>();
  const build = (s: S, depth: number): ITreeNode<S> => {
    seen.add(s.id);
    const kids = (childrenOf.get(s.id) || []).filter(c => !seen.has(c.id)).sort(byCreated);
    return { session: s, depth, children: kids.map(c => build(c, depth + 1)) };
  };
  roots.sort((a, b) => byCreated(b, a));
  const forest = roots.map(r => build(r, 0));
  // Sessions caught in a parent cycle are reachable from no root: show them as roots.
  for (const s of byId.values()) {
    if (!seen.has(s.id)) {
      forest.push(build(s, 0));
    }
  }
  return forest;
}

export interface IFilter {
  /** States to show; empty means all. */
  states?: ReadonlySet<string>;
  /** Case-insensitive text matched against name, prompt, id and model. */
  text?: string;
}

/** Whether a single session matches the filter (ignoring its relatives). */
export function matchesFilter(s: TreeSession, filter: IFilter): boolean {
  if (filter.states && filter.states.size && !filter.states.has(s.state)) {
    return false;
  }
  const text = (filter.text || '').trim().toLowerCase();
  if (text) {
    const hay = [s.name, s.prompt, s.id, s.model].filter(Boolean).join('\n').toLowerCase();
    if (!hay.includes(text)) {
      return false;
    }
  }
  return true;
}

export interface IFilteredNode<S extends TreeSession = Session> extends ITreeNode<S> {
  children: IFilteredNode<S>[];
  /** False for an ancestor kept only to give context to a matching descendant. */
  matches: boolean;
}

/**
 * Filter a forest: keep nodes that match, plus their ancestors (marked
 * `matches: false`) so the hierarchy stays visible.
 */
export function filterTree<S extends TreeSession>(
  forest: ITreeNode<S>[],
  filter: IFilter
): IFilteredNode<S>[] {
  const walk = (n: ITreeNode<S>): IFilteredNode<S> | null => {
    const kids = n.children.map(walk).filter((c): c is IFilteredNode<S> => c !== null);
    const matches = matchesFilter(n.session, filter);
    if (!matches && !kids.length) {
      return null;
    }
    return { session: n.session, depth: n.depth, children: kids, matches };
  };
  return forest.map(walk).filter((n): n is IFilteredNode<S> => n !== null);
}

export interface IRow<S extends TreeSession = Session> {
  session: S;
  depth: number;
  hasChildren: boolean;
  collapsed: boolean;
  matches: boolean;
  /** Number of descendants (all levels) in the (filtered) tree. */
  descendants: number;
}

/** Depth-first list of the rows to display, skipping children of collapsed nodes. */
export function flattenTree<S extends TreeSession>(
  forest: ITreeNode<S>[],
  collapsed: ReadonlySet<string> = new Set()
): IRow<S>[] {
  const rows: IRow<S>[] = [];
  // Returns the node's descendant count, so each subtree is walked once.
  const walk = (n: ITreeNode<S>, visible: boolean): number => {
    const isCollapsed = collapsed.has(n.session.id) && n.children.length > 0;
    const row: IRow<S> | null = visible
      ? {
          session: n.session,
          depth: n.depth,
          hasChildren: n.children.length > 0,
          collapsed: isCollapsed,
          matches: (n as IFilteredNode<S>).matches ?? true,
          descendants: 0
        }
      : null;
    if (row) {
      rows.push(row);
    }
    let descendants = 0;
    for (const c of n.children) {
      descendants += 1 + walk(c, visible && !isCollapsed);
    }
    if (row) {
      row.descendants = descendants;
    }
    return descendants;
  };
  forest.forEach(n => walk(n, true));
  return rows;
}

/** Count sessions per state (all states present, zero if none). */
export function countByState(sessions: Iterable<Pick<Session, 'state'>>): Record<SessionState, number> {
  const counts = {} as Record<SessionState, number>;
  for (const st of SESSION_STATES) {
    counts[st] = 0;
  }
  for (const s of sessions) {
    counts[s.state] = (counts[s.state] || 0) + 1;
  }
  return counts;
}

/**
 * Window of rows to render for a virtualised list with fixed row height:
 * [start, end) indices, including `overscan` rows on either side.
 */
export function visibleRange(
  total: number,
  scrollTop: number,
  viewportHeight: number,
  rowHeight: number,
  overscan = 5
): { start: number; end: number } {
  if (total <= 0 || rowHeight <= 0) {
    return { start: 0, end: 0 };
  }
  const first = Math.floor(Math.max(0, scrollTop) / rowHeight);
  const count = Math.ceil(Math.max(0, viewportHeight) / rowHeight) + 1;
  const start = Math.max(0, Math.min(total - 1, first) - overscan);
  const end = Math.min(total, first + count + overscan);
  return { start, end: Math.max(start, end) };
}

/** Whether a session id is in the subtree rooted at rootId. */
export function isInSubtree(
  sessions: Iterable<Pick<Session, 'id' | 'parent_id'>>,
  rootId: string,
  id: string
): boolean {
  const byId = new Map<string, Pick<Session, 'id' | 'parent_id'>>();
  for (const s of sessions) {
    byId.set(s.id, s);
  }
  let cur = byId.get(id);
  const seen = new Set<string>();
  while (cur && !seen.has(cur.id)) {
    if (cur.id === rootId) {
      return true;
    }
    seen.add(cur.id);
    cur = cur.parent_id ? byId.get(cur.parent_id) : undefined;
  }
  return false;
}
