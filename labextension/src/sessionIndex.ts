/**
 * The sessions the panel knows, indexed for incremental updates: a full list replaces them, a
 * list of what changed (`GET /api/prime/sessions?changed_after=cursor`) is merged in, a push
 * notification patches a state. Pure (unit tested in node: labextension/test/sessionIndex.spec.ts).
 */
import {
  SESSION_EVENT_SCHEMA,
  Session,
  SessionNotification,
  SessionState,
  TrajectoryEvent,
  Usage
} from './protocol';

export class SessionIndex {
  get size(): number {
    return this._byId.size;
  }

  get(id: string): Session | undefined {
    return this._byId.get(id);
  }

  /** Every session, in the order they were first seen (the array is kept until a change). */
  values(): readonly Session[] {
    if (!this._values) {
      this._values = Array.from(this._byId.values());
    }
    return this._values;
  }

  /** The ids of a session's children that are known. */
  childIds(id: string): ReadonlySet<string> {
    return this._children.get(id) ?? EMPTY;
  }

  /** Replace everything by a full list. */
  reset(sessions: readonly Session[]): void {
    this._byId.clear();
    this._children.clear();
    for (const s of sessions) {
      this._put(s);
    }
    this._values = null;
  }

  /**
   * Merge records that changed. The daemon marks only the session it wrote as changed, yet an
   * ancestor's `usage.subtree` counts its descendants' spending: those of ancestors that are
   * not in `sessions` are summed again here, deepest first. Returns every id that changed.
   */
  merge(sessions: readonly Session[]): Set<string> {
    const changed = new Set<string>();
    for (const s of sessions) {
      this._put(s);
      changed.add(s.id);
    }
    const stale = new Map<string, Session>();
    for (const s of sessions) {
      for (let p = this._parent(s); p && !changed.has(p.id) && !stale.has(p.id); p = this._parent(p)) {
        stale.set(p.id, p);
      }
    }
    const deepestFirst = Array.from(stale.values()).sort((a, b) => b.depth - a.depth);
    for (const a of deepestFirst) {
      const parts = [a.usage.own];
      for (const c of this.childIds(a.id)) {
        parts.push(this._byId.get(c)!.usage.subtree);
      }
      this._byId.set(a.id, { ...a, usage: { own: a.usage.own, subtree: sumUsage(parts) } });
      changed.add(a.id);
    }
    if (changed.size) {
      this._values = null;
    }
    return changed;
  }

  /** Set a known session's state from a push notification; whether it changed. */
  patchState(id: string, state: SessionState): boolean {
    const s = this._byId.get(id);
    if (!s || s.state === state) {
      return false;
    }
    this._byId.set(id, { ...s, state });
    this._values = null;
    return true;
  }

  private _put(s: Session): void {
    this._byId.set(s.id, s);
    if (s.parent_id) {
      let kids = this._children.get(s.parent_id);
      if (!kids) {
        kids = new Set();
        this._children.set(s.parent_id, kids);
      }
      kids.add(s.id);
    }
  }

  private _parent(s: Session): Session | undefined {
    return s.parent_id ? this._byId.get(s.parent_id) : undefined;
  }

  private _byId = new Map<string, Session>();
  private _children = new Map<string, Set<string>>();
  private _values: Session[] | null = null;
}

const EMPTY: ReadonlySet<string> = new Set();

/** The sum of usages, field by field (what the daemon does for a subtree). */
export function sumUsage(parts: readonly Usage[]): Usage {
  const total = { ...parts[0] };
  for (const part of parts.slice(1)) {
    for (const key of Object.keys(total) as (keyof Usage)[]) {
      total[key] += part[key] ?? 0;
    }
  }
  return total;
}

/** A push event of the session schema, from jupyter_server's event bus; null for others. */
export function sessionNotification(e: { schema_id: string }): SessionNotification | null {
  return e.schema_id === SESSION_EVENT_SCHEMA ? (e as unknown as SessionNotification) : null;
}

/** Merge event pages: dedupe by seq, sorted by seq. Returns a new array. */
export function mergeEvents(existing: readonly TrajectoryEvent[], incoming: readonly TrajectoryEvent[]): TrajectoryEvent[] {
  const bySeq = new Map<number, TrajectoryEvent>();
  for (const e of existing) {
    bySeq.set(e.seq, e);
  }
  for (const e of incoming) {
    bySeq.set(e.seq, e);
  }
  return Array.from(bySeq.values()).sort((a, b) => a.seq - b.seq);
}

/** The highest seq in a list of events (0 if empty). */
export function lastSeq(events: readonly TrajectoryEvent[]): number {
  return events.reduce((m, e) => Math.max(m, e.seq), 0);
}

/** Why "Open console" cannot attach to a session's kernel; null when it can. */
export type NoConsole = 'no-kernel' | 'kernel-gone';

export function consoleUnavailable(s: Pick<Session, 'kernel_id' | 'kernel_alive'>): NoConsole | null {
  if (!s.kernel_id) {
    return 'no-kernel';
  }
  return s.kernel_alive === false ? 'kernel-gone' : null;
}
