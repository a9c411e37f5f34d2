import type { Event } from '@jupyterlab/services';
import { Signal } from '@lumino/signaling';

import { MODEL_DELTA_SCHEMA, Session, SESSION_EVENT_SCHEMA, SessionFilter, SessionList } from '../src/protocol';
import { SessionsModel, UPDATE_MEASURE } from '../src/sessionsModel';
import type { IPrimeAPI, ISessionsChange } from '../src/tokens';
import { S, U } from './fixtures';

/** A daemon's list endpoint: a version bumped per change, `changed_after` honoured. */
class FakeDaemon {
  epoch = 'e1';
  version = 0;
  sessions = new Map<string, { session: Session; changed: number }>();
  calls: (number | undefined)[] = [];

  put(s: Session): void {
    this.sessions.set(s.id, { session: s, changed: ++this.version });
  }

  api(): IPrimeAPI {
    return {
      listSessions: async (filters: SessionFilter = {}): Promise<SessionList> => {
        this.calls.push(filters.changed_after);
        const after = filters.changed_after;
        const sessions = [...this.sessions.values()]
          .filter(r => after === undefined || r.changed > after)
          .map(r => r.session);
        return { sessions, cursor: this.version, epoch: this.epoch };
      },
      getSession: async (id: string) => this.sessions.get(id)!.session
    } as unknown as IPrimeAPI;
  }
}

function bus() {
  const stream = new Signal<unknown, Event.Emission>({});
  return { manager: { stream } as unknown as Event.IManager, stream };
}

const flush = () => new Promise(resolve => setTimeout(resolve, 5));

describe('SessionsModel', () => {
  let daemon: FakeDaemon;
  let events: ReturnType<typeof bus>;
  let model: SessionsModel;
  let changes: ISessionsChange[];

  beforeEach(async () => {
    daemon = new FakeDaemon();
    daemon.put(S('a', { created: 1 }));
    daemon.put(S('b', { created: 2 }));
    events = bus();
    model = new SessionsModel({ api: daemon.api(), events: events.manager, pollInterval: 0, coalesce: 1 });
    changes = [];
    model.changed.connect((_, c) => changes.push(c));
    await model.refresh();
  });

  afterEach(() => model.dispose());

  it('fetches the whole list first, then only what changed since its cursor', async () => {
    expect(model.sessions.map(s => s.id)).toEqual(['a', 'b']);
    expect(changes).toEqual([{ ids: new Set(), all: true }]);
    daemon.put(S('b', { created: 2, state: 'DONE' }));
    daemon.put(S('c', { created: 3 }));
    await model.requestUpdate();
    expect(daemon.calls).toEqual([undefined, 2]);
    expect(model.get('b')!.state).toBe('DONE');
    expect(model.sessions.map(s => s.id)).toEqual(['a', 'b', 'c']);
    expect(changes[1]).toEqual({ ids: new Set(['b', 'c']), all: false });
    // Nothing changed: no change to tell.
    await model.requestUpdate();
    expect(daemon.calls).toEqual([undefined, 2, 4]);
    expect(changes).toHaveLength(2);
  });

  it('patches the state from a push event at once, then asks what changed', async () => {
    daemon.put(S('a', { created: 1, state: 'IDLE', usage: { own: U({ total_tokens: 5 }), subtree: U({ total_tokens: 5 }) } }));
    events.stream.emit({ schema_id: SESSION_EVENT_SCHEMA, session_id: 'a', kind: 'state', state: 'IDLE', seq: 4 });
    expect(model.get('a')!.state).toBe('IDLE');
    expect(changes[1]).toEqual({ ids: new Set(['a']), all: false });
    await flush();
    expect(daemon.calls).toEqual([undefined, 2]);
    expect(model.get('a')!.usage.own.total_tokens).toBe(5);
  });

  it('folds a burst of push events into one fetch', async () => {
    const notes: string[] = [];
    model.notified.connect((_, n) => notes.push(`${n.session_id}:${n.seq}`));
    for (let seq = 1; seq <= 20; seq++) {
      events.stream.emit({ schema_id: SESSION_EVENT_SCHEMA, session_id: 'b', kind: 'cell', state: 'RUNNING', seq });
    }
    events.stream.emit({ schema_id: 'https://events.jupyter.org/other', session_id: 'b' });
    await flush();
    expect(notes).toHaveLength(20);
    expect(daemon.calls).toEqual([undefined, 2]);
  });

  it('passes the pieces of a streamed reply on as they come, fetching and changing nothing', async () => {
    const pieces: string[] = [];
    model.streamed.connect((_, d) => pieces.push(`${d.session_id}:${d.call}.${d.seq} ${d.text}`));
    const delta = { session_id: 'b', root_id: 'b', call: 1, seq: 1, text: 'Let me', done: false };
    events.stream.emit({ schema_id: MODEL_DELTA_SCHEMA, ...delta });
    events.stream.emit({ schema_id: MODEL_DELTA_SCHEMA, ...delta, seq: 2, text: ' see', done: true });
    expect(pieces).toEqual(['b:1.1 Let me', 'b:1.2  see']);
    await flush();
    expect(daemon.calls).toEqual([undefined]);
    expect(changes).toHaveLength(1);
  });

  it('fetches everything again when the daemon restarted (a new epoch)', async () => {
    daemon.epoch = 'e2';
    daemon.sessions.delete('a');
    await model.requestUpdate();
    expect(daemon.calls).toEqual([undefined, 2, undefined]);
    expect(model.sessions.map(s => s.id)).toEqual(['b']);
    expect(changes[1].all).toBe(true);
  });

  it('keeps a session it created, and measures each update', async () => {
    performance.clearMeasures(UPDATE_MEASURE);
    const created = S('n', { created: 9 });
    (model as unknown as { _api: IPrimeAPI })._api.createSession = async () => created;
    await model.create({ prompt: 'x' });
    expect(model.get('n')).toBe(created);
    const measures = performance.getEntriesByName(UPDATE_MEASURE);
    expect(measures).toHaveLength(1);
    expect((measures[0] as PerformanceMeasure).detail).toEqual({ source: 'record', changed: 1, total: 3 });
  });

  it('reports a failed fetch as its error', async () => {
    (model as unknown as { _api: IPrimeAPI })._api.listSessions = async () => {
      throw new Error('offline');
    };
    await model.refresh();
    expect(model.error).toBe('offline');
    expect(model.sessions).toHaveLength(2);
  });
});
