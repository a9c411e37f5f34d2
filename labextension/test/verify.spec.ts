/**
 * @jest-environment jsdom
 */
import { untranslated } from '../src/i18n';
import { SessionModel } from '../src/sessionModel';
import { canVerify, refineProgressText, verificationText, VerifySection } from '../src/verify';
import { FakeDaemon, S } from './fixtures';

const settled = () => new Promise(resolve => setTimeout(resolve, 10));

describe('what the view says of verification', () => {
  it('offers it for an agent with an answer that is DONE or IDLE', () => {
    expect(canVerify(S('s1', { state: 'DONE', has_answer: true }))).toBe(true);
    expect(canVerify(S('s1', { state: 'IDLE', has_answer: true }))).toBe(true);
    expect(canVerify(S('s1', { state: 'DONE', has_answer: false }))).toBe(false);
    expect(canVerify(S('s1', { state: 'RUNNING', has_answer: true }))).toBe(false);
    expect(canVerify(S('n1', { state: 'DONE', has_answer: true, kind: 'notebook' }))).toBe(false);
    expect(canVerify(undefined)).toBe(false);
  });

  it('says who verified, what was learned, or why nothing was', () => {
    const learned = { refinement_id: 'r1', status: 'pending', entry: 'example/sum-square' };
    expect(verificationText({ correct: true, by: 'user', ts: 1, learned }, untranslated)).toBe(
      'Verified right by you · learned example/sum-square, waiting for review (proposal r1)'
    );
    expect(verificationText({ correct: true, by: 'gate `pytest`', ts: 1, learned: { ...learned, status: 'applied' } }, untranslated)).toBe(
      'Verified right by gate `pytest` · learned example/sum-square (applied, proposal r1)'
    );
    expect(verificationText({ correct: false, by: 'user', ts: 1, refused: 'no cell called answer(...)' }, untranslated)).toBe(
      'Verified wrong by you · nothing learned: no cell called answer(...)'
    );
  });

  it("shows a refinement's progress: reading, then the reply as it grows", () => {
    expect(refineProgressText(undefined, 2.4, untranslated)).toBe('Refining the harness (one model call)… 2 s');
    const p = { model: 'local/qwen', trigger: 't', started: 0, seconds: 3, chars: 0, phase: 'reading' as const };
    expect(refineProgressText(p, 5, untranslated)).toBe('Refining with local/qwen: reading the evidence, 5 s');
    expect(refineProgressText({ ...p, phase: 'writing', chars: 120, seconds: 9 }, 8, untranslated)).toBe(
      'Refining with local/qwen: 120 characters of reply, 9 s'
    );
  });
});

describe('VerifySection: the ✓ Right / ✗ Wrong buttons of a session view', () => {
  let fake: FakeDaemon;
  let model: SessionModel;
  let reports: string[];

  const make = (askNote: () => Promise<string | null> = async () => '') => {
    model = new SessionModel({ id: 'sa', sessions: fake.sessions(), api: fake.api(), coalesce: 1 });
    reports = [];
    const section = new VerifySection({ model, trans: untranslated, report: text => reports.push(text), askNote });
    model.changed.connect(() => section.render());
    return section;
  };
  const button = (section: VerifySection, which: string) => section.node.querySelector(`[data-verify="${which}"]`) as HTMLButtonElement;

  beforeEach(() => {
    fake = new FakeDaemon();
  });
  afterEach(() => model.dispose());

  it('is hidden until the session has an answer', async () => {
    const section = make();
    await settled();
    expect(section.node.style.display).toBe('none');
    fake.record = S('sa', { state: 'DONE', has_answer: true, answer_repr: '338350' });
    section.render();
    expect(section.node.style.display).toBe('');
    expect(section.node.textContent).toContain('Is the answer right?');
  });

  it('marks the answer right, then shows what was learned from the record fetched again', async () => {
    fake.record = S('sa', { state: 'DONE', has_answer: true, answer_repr: '338350' });
    const section = make();
    await settled();
    button(section, 'right').click();
    await settled();
    expect(fake.calls).toContain('verify sa {"correct":true}');
    expect(fake.calls).toContain('fetch sa');
    expect(reports).toEqual(['Verified right by you · learned example/x, waiting for review (proposal r1)']);
    expect(section.node.textContent).toContain('Verified right by you');
    expect(button(section, 'right').classList).toContain('jp-mod-active');
    expect(button(section, 'wrong').classList).not.toContain('jp-mod-active');
  });

  it('asks what is wrong with a wrong answer; giving up verifies nothing', async () => {
    fake.record = S('sa', { state: 'DONE', has_answer: true, answer_repr: '5050' });
    let answer: string | null = null;
    const section = make(async () => answer);
    await settled();
    await section.verify(false);
    expect(fake.calls.filter(c => c.startsWith('verify'))).toEqual([]);
    answer = ' the squares, not the numbers ';
    await section.verify(false);
    expect(fake.calls).toContain('verify sa {"correct":false,"note":"the squares, not the numbers"}');
    expect(button(section, 'wrong').classList).toContain('jp-mod-active');
  });

  it("reports the daemon's refusal in red", async () => {
    fake.record = S('sa', { state: 'DONE', has_answer: true, answer_repr: '1' });
    fake.refuseVerify = 'sa has no answer to verify';
    const errors: string[] = [];
    model = new SessionModel({ id: 'sa', sessions: fake.sessions(), api: fake.api(), coalesce: 1 });
    const section = new VerifySection({
      model,
      trans: untranslated,
      report: (text, error) => (error ? errors.push(text) : undefined),
      askNote: async () => ''
    });
    await section.verify(true);
    expect(errors).toEqual(['Could not verify the answer: sa has no answer to verify']);
    expect(button(section, 'right').disabled).toBe(false);
  });
});
