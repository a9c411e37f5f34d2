/**
 * @jest-environment jsdom
 */
import { GoalSection } from '../src/goalSection';
import { untranslated } from '../src/i18n';
import { SessionModel } from '../src/sessionModel';
import { FakeDaemon, H, S } from './fixtures';

const settled = () => new Promise(resolve => setTimeout(resolve, 10));

describe('GoalSection', () => {
  let fake: FakeDaemon;
  let model: SessionModel;
  let section: GoalSection;
  let reports: string[];
  let opened: string[];

  const node = () => section.node;
  const row = (id: string) => node().querySelector(`[data-schedule-id="${id}"]`) as HTMLElement;
  const button = (label: string) => [...node().querySelectorAll('button')].find(b => b.textContent === label && b.style.display !== 'none');

  beforeEach(async () => {
    fake = new FakeDaemon();
    fake.record = S('sa', {
      goal: {
        text: 'Keep the build green',
        status: 'active',
        set_by: 'sa',
        set_at: 1,
        updated: 2,
        progress: [{ note: 'wrote a test', ts: 2, by: 'sa' }]
      }
    });
    fake.schedules = [H('h1', { next: 20, ticks: 1 }), H('h2', { owner: 'sa', target_id: 'sb', kind: 'cron', spec: '0 9 * * 1', next: 5 })];
    model = new SessionModel({ id: 'sa', sessions: fake.sessions(), api: fake.api(), coalesce: 1 });
    reports = [];
    opened = [];
    section = new GoalSection({ model, trans: untranslated, openSession: id => opened.push(id), report: text => reports.push(text) });
    model.changed.connect(() => section.render());
    await settled();
  });

  afterEach(() => {
    section.dispose();
    model.dispose();
  });

  it('shows the goal: status, text, who set it, the progress notes', () => {
    expect(node().querySelector('.jp-PrimeSession-goalStatus')!.textContent).toBe('Goal');
    expect(node().querySelector('.jp-PrimeSession-goalText')!.textContent).toBe('Keep the build green');
    expect(node().querySelector('.jp-PrimeSession-goalBy')!.textContent).toBe('set by this agent');
    expect(node().querySelector('.jp-PrimeSession-goalProgress li')!.textContent).toContain('wrote a test');
    expect(button('Change…')).toBeDefined();
    expect(button('Clear')).toBeDefined();
  });

  it('shows the schedules, soonest first: timing, counts, another target as a link', () => {
    const rows = [...node().querySelectorAll('.jp-PrimeSession-schedule')].map(r => (r as HTMLElement).dataset.scheduleId);
    expect(rows).toEqual(['h2', 'h1']);
    expect(row('h2').querySelector('.jp-PrimeSession-scheduleTiming')!.textContent).toBe('cron 0 9 * * 1');
    expect(row('h1').querySelector('.jp-PrimeSession-scheduleTiming')!.textContent).toBe('every 1s');
    expect(row('h1').querySelector('.jp-PrimeSession-scheduleCounts')!.textContent).toBe('1 delivered');
    expect(node().querySelector('.jp-PrimeSession-scheduleCount')!.textContent).toBe('2 active');
    (row('h2').querySelector('a') as HTMLAnchorElement).click();
    expect(opened).toEqual(['sb']);
  });

  it('keeps a row and its button when a tick changes it (a click spans a press and a release)', async () => {
    const before = row('h1');
    const cancel = before.querySelector('button');
    fake.schedules[0].ticks = 2;
    fake.note('mail_in');
    await settled();
    expect(row('h1')).toBe(before);
    expect(before.querySelector('button')).toBe(cancel);
    expect(before.querySelector('.jp-PrimeSession-scheduleCounts')!.textContent).toBe('2 delivered');
  });

  it('cancels a schedule: it stays listed as cancelled, without its button', async () => {
    row('h1').querySelector('button')!.click();
    await settled();
    expect(fake.calls).toContain('cancel h1');
    expect(row('h1').dataset.state).toBe('cancelled');
    expect(row('h1').querySelector('.jp-PrimeSession-scheduleState')!.textContent).toBe('cancelled');
    expect(row('h1').querySelector('button')!.style.display).toBe('none');
    expect(node().querySelector('.jp-PrimeSession-scheduleCount')!.textContent).toBe('1 active');
    expect(reports).toEqual(['Schedule cancelled.']);
  });

  it('changes the goal in its editor (Enter saves), and clears it', async () => {
    button('Change…')!.click();
    const input = node().querySelector('textarea')!;
    expect(input.value).toBe('Keep the build green');
    input.value = 'Ship it';
    input.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter' }));
    await settled();
    expect(fake.calls).toContain('goal sa Ship it');
    expect(node().querySelector('.jp-PrimeSession-goalText')!.textContent).toBe('Ship it');
    expect(node().querySelector('.jp-PrimeSession-goalBy')!.textContent).toBe('set by you');
    expect((node().querySelector('.jp-PrimeSession-goalEditor') as HTMLElement).style.display).toBe('none');
    button('Clear')!.click();
    await settled();
    expect(node().querySelector('.jp-PrimeSession-goalHead.jp-mod-none')!.textContent).toContain('No goal');
    expect(button('Set goal…')).toBeDefined();
    expect(reports).toEqual(['Goal set.', 'Goal cleared.']);
  });

  it('offers no changes once the session has ended; shows nothing without goal or schedules', async () => {
    fake.record = { ...fake.record, state: 'DONE' };
    fake.changed.emit({ ids: new Set(['sa']), all: false });
    expect(button('Change…')).toBeUndefined();
    expect(button('Clear')).toBeUndefined();
    expect(node().querySelector('.jp-PrimeSession-goalText')!.textContent).toBe('Keep the build green');
    fake.record = { ...fake.record, goal: undefined };
    fake.schedules = [];
    fake.note('schedule');
    await settled();
    expect(node().style.display).toBe('none');
  });
});
