/** Sessions and events for the tests: full protocol records with only what a test sets. */
import type { EventDataMap, EventKind, Session, TrajectoryEvent, Usage } from '../src/protocol';

export function U(partial: Partial<Usage> = {}): Usage {
  return {
    prompt_tokens: 0,
    completion_tokens: 0,
    cached_tokens: 0,
    total_tokens: 0,
    cost: 0,
    model_calls: 0,
    cells: 0,
    wall_time: 0,
    kernel_time: 0,
    ...partial
  };
}

export function S(id: string, extra: Partial<Session> = {}): Session {
  return {
    id,
    name: '',
    prompt: '',
    model: null,
    state: 'RUNNING',
    kind: 'agent',
    parent_id: null,
    root_id: id,
    depth: 0,
    created: 1000,
    options: {},
    has_answer: false,
    kernel_alive: false,
    usage: { own: U(), subtree: U() },
    children: [],
    ...extra
  };
}

export function E<K extends EventKind>(kind: K, data: EventDataMap[K], seq = 1): TrajectoryEvent<K> {
  return { seq, session_id: 's0123456789', ts: 1_700_000_000, kind, data } as TrajectoryEvent<K>;
}
