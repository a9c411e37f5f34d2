/**
 * Sessions, events and schedules for the tests: full protocol records with only what a test
 * sets; and a daemon's goal and schedule routes for a session's model.
 */
import { Signal } from '@lumino/signaling';

import type {
  CreateSchedule,
  EventDataMap,
  EventKind,
  GoalChange,
  ModelDelta,
  Schedule,
  Session,
  SessionNotification,
  TrajectoryEvent,
  Usage,
  Verification,
  VerifyRequest
} from '../src/protocol';
import type { IPrimeAPI, IPrimeSessions, ISessionsChange } from '../src/tokens';

export function U(partial: Partial<Usage> = {}): Usage {
  return {
    prompt_tokens: 0,
    completion_tokens: 0,
    cached_tokens: 0,
    cache_write_tokens: 0,
    total_tokens: 0,
    cost: 0,
    uncached_cost: 0,
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

export function H(id: string, extra: Partial<Schedule> = {}): Schedule {
  return {
    id,
    owner: 'user',
    target_id: 'sa',
    kind: 'every',
    spec: '1.0',
    message: 'tick',
    created: 1,
    next: 10,
    ticks: 0,
    missed: 0,
    skipped: 0,
    state: 'active',
    ...extra
  };
}

/** The daemon's goal and schedule routes and a session list, recording what was asked. */
export class FakeDaemon {
  record: Session = S('sa');
  schedules: Schedule[] = [H('h1', { next: 20 }), H('h2', { next: 5 })];
  calls: string[] = [];
  /** The message a verify is refused with (none: it succeeds). */
  refuseVerify = '';
  changed = new Signal<IPrimeSessions, ISessionsChange>({} as IPrimeSessions);
  notified = new Signal<IPrimeSessions, SessionNotification>({} as IPrimeSessions);
  streamed = new Signal<IPrimeSessions, ModelDelta>({} as IPrimeSessions);
  /** The trajectory `events()` returns (after the seq asked for). */
  trajectory: TrajectoryEvent[] = [];

  sessions(): IPrimeSessions {
    return {
      get: (id: string) => (id === this.record.id ? this.record : undefined),
      fetch: async (id: string) => {
        this.calls.push(`fetch ${id}`);
        this.changed.emit({ ids: new Set([id]), all: false });
        return this.record;
      },
      changed: this.changed,
      notified: this.notified,
      streamed: this.streamed
    } as unknown as IPrimeSessions;
  }

  api(): IPrimeAPI {
    return {
      events: async (_id: string, after = 0) => this.trajectory.filter(e => e.seq > after),
      schedules: async (filters: { session?: string }) => {
        this.calls.push(`schedules ${filters.session}`);
        return this.schedules.map(s => ({ ...s }));
      },
      createSchedule: async (body: CreateSchedule) => {
        this.calls.push(`create ${JSON.stringify(body)}`);
        if (body.cron === 'bad') {
          throw new Error('the cron expression does not parse');
        }
        const made = H('h3', { message: body.message, next: 1 });
        this.schedules.push(made);
        return { ...made };
      },
      cancelSchedule: async (id: string) => {
        this.calls.push(`cancel ${id}`);
        const s = this.schedules.find(x => x.id === id)!;
        s.state = 'cancelled';
        s.next = null;
        return { ...s };
      },
      setGoal: async (id: string, change: GoalChange) => {
        this.calls.push(`goal ${id} ${change.text}`);
        this.record = { ...this.record, goal: { text: change.text!, status: 'active', set_by: 'user', set_at: 1, updated: 1 } };
        return this.record.goal;
      },
      verify: async (id: string, body: VerifyRequest): Promise<Verification> => {
        this.calls.push(`verify ${id} ${JSON.stringify(body)}`);
        if (this.refuseVerify) {
          throw new Error(this.refuseVerify);
        }
        const verified: Verification = {
          correct: body.correct ?? true,
          by: 'user',
          ts: 1,
          learned: { refinement_id: 'r1', status: 'pending', entry: 'example/x' }
        };
        this.record = { ...this.record, verified };
        return verified;
      },
      clearGoal: async (id: string) => {
        this.calls.push(`clear ${id}`);
        this.record = { ...this.record, goal: undefined };
        return true;
      }
    } as unknown as IPrimeAPI;
  }

  note(kind: SessionNotification['kind'], sessionId = 'sa'): void {
    this.notified.emit({ session_id: sessionId, kind, state: 'RUNNING', seq: 1 });
  }
}
