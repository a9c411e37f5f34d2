import type { ModelDelta } from '../src/protocol';
import { SessionModel } from '../src/sessionModel';
import type { IPrimeAPI } from '../src/tokens';
import { E, FakeDaemon } from './fixtures';

const settled = () => new Promise(resolve => setTimeout(resolve, 10));

describe('SessionModel: goal and schedules', () => {
  let fake: FakeDaemon;
  let model: SessionModel;

  beforeEach(async () => {
    fake = new FakeDaemon();
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

  it("adds a schedule to the session and lists it from the reply; a refusal is the daemon's message", async () => {
    fake.calls = [];
    await model.addSchedule({ every: 30, message: 'ping' });
    expect(fake.calls).toEqual(['create {"every":30,"message":"ping","session_id":"sa"}']);
    expect(model.schedules.map(s => s.id)).toEqual(['h3', 'h2', 'h1']);
    await expect(model.addSchedule({ cron: 'bad', message: 'x' })).rejects.toThrow('the cron expression does not parse');
    expect(model.schedules).toHaveLength(3);
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

describe('SessionModel: the reply its model is writing', () => {
  let fake: FakeDaemon;
  let model: SessionModel;
  const D = (call: number, seq: number, text: string, done = false, session = 'sa'): ModelDelta => ({
    session_id: session,
    root_id: session,
    call,
    seq,
    text,
    done
  });
  const call = { model: 'scripted/x', usage: {}, cost: 0, duration: 1 };

  beforeEach(async () => {
    fake = new FakeDaemon();
    model = new SessionModel({ id: 'sa', sessions: fake.sessions(), api: fake.api(), coalesce: 1 });
    await settled();
  });

  afterEach(() => model.dispose());

  it("takes its session's deltas from the event bus, not another's", () => {
    const seen: (string | undefined)[] = [];
    model.live.changed.connect(() => seen.push(model.live.current?.text));
    fake.streamed.emit(D(1, 1, 'Let me '));
    fake.streamed.emit(D(1, 1, 'other', false, 'sb'));
    fake.streamed.emit(D(1, 2, 'compute'));
    expect(seen).toEqual(['Let me ', 'Let me compute']);
  });

  it('drops it when the trajectory stores that call, after drawing the stored events', async () => {
    fake.streamed.emit(D(1, 1, 'Let me compute'));
    fake.streamed.emit(D(1, 2, '', true));
    const order: string[] = [];
    model.added.connect((_, events) => order.push(`added ${events.map(e => e.kind).join(',')}`));
    model.live.changed.connect(() => order.push(`live ${model.live.current?.text ?? 'none'}`));
    fake.trajectory = [E('model_call', call, 1), E('assistant', { content: 'Let me compute' }, 2)];
    fake.note('model_call');
    await settled();
    expect(order).toEqual(['added model_call,assistant', 'live none']);
    // The next call streams while the trajectory has the first one: it shows.
    fake.streamed.emit(D(2, 1, 'Now'));
    expect(model.live.current).toEqual({ call: 2, text: 'Now', done: false });
  });

  it('knows calls stored before it opened: their deltas show nothing', async () => {
    fake.trajectory = [E('model_call', call, 1), E('model_call', { ...call, purpose: 'compaction' }, 2)];
    const late = new SessionModel({ id: 'sa', sessions: fake.sessions(), api: fake.api(), coalesce: 1 });
    await settled();
    fake.streamed.emit(D(2, 3, 'stale'));
    expect(late.live.current).toBeNull();
    fake.streamed.emit(D(3, 1, 'live'));
    expect(late.live.current!.text).toBe('live');
    late.dispose();
  });

  it('stops listening when disposed', () => {
    model.dispose();
    fake.streamed.emit(D(1, 1, 'x'));
    expect(model.live.current).toBeNull();
  });
});
