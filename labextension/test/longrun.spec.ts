import { untranslated as trans } from '../src/i18n';
import {
  author,
  autonomy,
  autonomyText,
  dateTime,
  formatInterval,
  nextTick,
  scheduleRequest,
  scheduleTiming,
  sessionMarks,
  sortSchedules,
  tickCounts
} from '../src/longrun';
import { H, S } from './fixtures';

describe('formatInterval', () => {
  it('shows the two largest non-zero units', () => {
    expect(formatInterval(1)).toBe('1s');
    expect(formatInterval(0.5)).toBe('0.5s');
    expect(formatInterval(90)).toBe('1m 30s');
    expect(formatInterval(600)).toBe('10m');
    expect(formatInterval(5400)).toBe('1h 30m');
    expect(formatInterval(90061)).toBe('1d 1h');
    expect(formatInterval(0)).toBe('0s');
    expect(formatInterval(-1)).toBe('—');
  });
});

describe('a schedule as the view shows it', () => {
  it('its timing: an interval stored as seconds, a time, a cron expression', () => {
    expect(scheduleTiming({ kind: 'every', spec: '600.0' }, trans)).toBe('every 10m');
    const at = '2031-05-04T09:30:00+00:00';
    expect(scheduleTiming({ kind: 'at', spec: at }, trans)).toBe(`at ${new Date(Date.parse(at)).toLocaleString()}`);
    expect(dateTime(at)).toBe(new Date(Date.parse(at)).toLocaleString());
    expect(scheduleTiming({ kind: 'cron', spec: '*/5 * * * *' }, trans)).toBe('cron */5 * * * *');
  });

  it('its next tick: a countdown while active, "due now" once due, nothing once ended', () => {
    expect(nextTick(H('a', { next: 100 }), 95_500, trans)).toBe('next in 5s');
    expect(nextTick(H('a', { next: 100 }), 40_000, trans)).toBe('next in 1m');
    expect(nextTick(H('a', { next: 100 }), 100_000, trans)).toBe('due now');
    expect(nextTick(H('a', { next: null }), 0, trans)).toBeNull();
    expect(nextTick(H('a', { next: 100, state: 'cancelled' }), 0, trans)).toBeNull();
  });

  it('its counts: delivered always, missed and skipped when there were any', () => {
    expect(tickCounts(H('a', { ticks: 3 }), trans)).toBe('3 delivered');
    expect(tickCounts(H('a', { ticks: 1, missed: 2, skipped: 4 }), trans)).toBe('1 delivered · 2 missed · 4 skipped');
  });

  it('who made it (or set a goal): you, this agent, another session', () => {
    expect(author('user', 's1', trans)).toBe('you');
    expect(author('s1', 's1', trans)).toBe('this agent');
    expect(author('s2', 's1', trans)).toBe('s2');
    expect(author('n1', 'n1', trans, 'notebook')).toBe('this notebook');
  });

  it('the list: active ones by next tick, then the ended ones newest first', () => {
    const list = [
      H('ended-old', { state: 'cancelled', created: 1, next: null }),
      H('later', { next: 300 }),
      H('never', { next: null }),
      H('ended-new', { state: 'ended', created: 5, next: null }),
      H('soon', { next: 100 })
    ];
    expect(sortSchedules(list).map(s => s.id)).toEqual(['soon', 'later', 'never', 'ended-new', 'ended-old']);
    expect(list[0].id).toBe('ended-old'); // a copy is sorted
  });
});

describe('autonomy and the marks of a row', () => {
  const plan = { gate: { shell: 'pytest -q' }, max_continuations: 3, turns: 12, tokens: 80000, seconds: 1800, gate_timeout: 300 };

  it('reads the plan and where the run is from the options', () => {
    expect(autonomy(S('a'))).toBeNull();
    const running = autonomy(S('a', { options: { autonomous: plan, autonomy: { continuation: 2, phase: 'work' } } }))!;
    expect(running).toEqual({ continuation: 2, of: 3, gate: 'pytest -q', phase: 'work' });
    expect(autonomyText(running, trans)).toBe('continuation 2 of 3 · gate: pytest -q');
    const fresh = autonomy(S('a', { options: { autonomous: { ...plan, gate: null } } }))!;
    expect(autonomyText(fresh, trans)).toBe('up to 3 continuations · ends when it answers');
    expect(autonomy(S('a', { options: { autonomous: { ...plan, gate: { python: 'ok' } } } }))!.gate).toBe('ok');
  });

  it('marks a goal (active or done) and an autonomous run; none for a plain session', () => {
    expect(sessionMarks(S('a'), trans)).toEqual([]);
    const goal = { text: 'Ship it\nsoon', status: 'active' as const, set_by: 'user', set_at: 1, updated: 1 };
    const marks = sessionMarks(S('a', { goal, options: { autonomous: plan, autonomy: { continuation: 1, phase: 'gate' } } }), trans);
    expect(marks).toEqual([
      { kind: 'goal', label: 'goal', status: 'active', title: 'Goal: Ship it' },
      { kind: 'autonomous', label: 'auto 1/3', status: 'gate', title: 'Autonomous: continuation 1 of 3 · gate: pytest -q' }
    ]);
    const done = sessionMarks(S('a', { goal: { ...goal, status: 'done' } }), trans);
    expect(done).toEqual([{ kind: 'goal', label: 'goal ✓', status: 'done', title: 'Goal (done): Ship it' }]);
  });
});

describe('scheduleRequest: a schedule the user makes in the view', () => {
  it('sends a bare number of seconds as a number, anything else as typed', () => {
    expect(scheduleRequest('every', ' 30 ', ' ping ', trans)).toEqual({ every: 30, message: 'ping' });
    expect(scheduleRequest('every', '10m', 'ping', trans)).toEqual({ every: '10m', message: 'ping' });
    expect(scheduleRequest('at', 'in 30m', 'wake up', trans)).toEqual({ at: 'in 30m', message: 'wake up' });
    expect(scheduleRequest('cron', '*/5 * * * *', 'check', trans)).toEqual({ cron: '*/5 * * * *', message: 'check' });
  });
  it('refuses an empty time or message with an example', () => {
    expect(() => scheduleRequest('cron', ' ', 'check', trans)).toThrow('Say when (e.g. */5 * * * *).');
    expect(() => scheduleRequest('every', '1m', '  ', trans)).toThrow('Type the message each tick delivers.');
  });
});
