import { Signal } from '@lumino/signaling';

import type { GoalChange, Schedule, Session, SessionNotification } from '../src/protocol';
import { SessionModel } from '../src/sessionModel';
import type { IPrimeAPI, IPrimeSessions, ISessionsChange } from '../src/tokens';
import { S } from './fixtures';

function H(id: string, extra: Partial<Schedule> = {}): Schedule {
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
class Fake {
  record: Session = S('sa');
  schedules: Schedule[] = [H('h1', { next: 20 }), H('h2', { next: 5 })];
  calls: string[] = [];
  changed = new Signal<IPrimeSessions, ISessionsChange>({} as IPrimeSessions);
  notified = new Signal<IPrimeSessions, SessionNotification>({} as IPrimeSessions);

  sessions(): IPrimeSessions {
    return {
      get: (id: string) => (id === this.record.id ? this.record : undefined),
      fetch: async (id: string) => {
        this.calls.push(`fetch ${id}`);
        this.changed.emit({ ids: new Set([id]), all: false });
        return this.record;
      },
      changed: this.changed,
      notified: this.notified
    } as unknown as IPrimeSessions;
  }

  api(): IPrimeAPI {
    return {
      events: async () => [],
      schedules: async (filters: { session?: string }) => {
        this.calls.push(`schedules ${filters.session}`);
        return this.schedules.map(s => ({ ...s }));
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

const settled = () => new Promise(resolve => setTimeout(resolve, 10));

describe('SessionModel: goal and schedules', () => {
  let fake: Fake;
  let model: SessionModel;

  beforeEach(async () => {
    fake = new Fake();
    model = new SessionModel({ id: 'sa', sessions: fake.sessions(), api: fake.api(), coalesce: 1 });
    await settled();
  });

  afterEach(() => model.dispose());

  it("fetches the session's schedules at once, active ones soonest first", () => {
    expect(fake.calls).toEqual(['schedules sa']);
    expect(model.schedules.map(s => s.id)).toEqual(['h2', 'h1']);
  });

  it('fetches them again on a schedule event or a message in (a tick), not on other events', async () => {
    fake.calls = [];
    fake.note('cell');
    fake.note('schedule', 'sother');
    await settled();
    expect(fake.calls).toEqual([]);
    fake.schedules[0].ticks = 3;
    fake.note('mail_in');
    await settled();
    expect(fake.calls).toEqual(['schedules sa']);
    expect(model.schedules.find(s => s.id === 'h1')!.ticks).toBe(3);
    fake.note('schedule');
    await settled();
    expect(fake.calls).toEqual(['schedules sa', 'schedules sa']);
  });

  it('cancels a schedule and takes its record from the reply (ended ones after active ones)', async () => {
    let changes = 0;
    model.changed.connect(() => changes++);
    fake.calls = [];
    await model.cancelSchedule('h2');
    expect(fake.calls).toEqual(['cancel h2']);
    expect(model.schedules.map(s => [s.id, s.state])).toEqual([
      ['h1', 'active'],
      ['h2', 'cancelled']
    ]);
    expect(changes).toBe(1);
  });

  it('sets and clears the goal as the user, then reads the record again', async () => {
    fake.calls = [];
    await model.setGoal('Pass the tests');
    expect(fake.calls).toEqual(['goal sa Pass the tests', 'fetch sa']);
    expect(model.session!.goal!.text).toBe('Pass the tests');
    await model.clearGoal();
    expect(fake.calls.slice(2)).toEqual(['clear sa', 'fetch sa']);
    expect(model.session!.goal).toBeUndefined();
  });

  it('reports a failed fetch of the schedules', async () => {
    (model as unknown as { _api: IPrimeAPI })._api.schedules = async () => {
      throw new Error('503 unavailable');
    };
    fake.note('schedule');
    await settled();
    expect(model.error).toBe('503 unavailable');
  });
});
