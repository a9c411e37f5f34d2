import { SessionModel } from '../src/sessionModel';
import type { IPrimeAPI } from '../src/tokens';
import { FakeDaemon } from './fixtures';

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
