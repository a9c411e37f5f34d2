/**
 * @jest-environment jsdom
 */
import { Widget } from '@lumino/widgets';

import { untranslated } from '../src/i18n';
import { EVENT_KINDS, EventDataMap, EventKind, TrajectoryEvent } from '../src/protocol';
import { EventRendererRegistry, RENDERERS } from '../src/renderers';
import type { IRenderContext } from '../src/tokens';
import { E } from './fixtures';

/** A context whose markdown, code and outputs are plain nodes the tests can read. */
function context(opened: string[] = []): IRenderContext {
  const node = (cls: string, text: string) => {
    const w = new Widget();
    w.addClass(cls);
    w.node.textContent = text;
    return w;
  };
  return {
    trans: untranslated,
    markdown: text => node('test-markdown', text),
    code: source => node('test-code', source),
    outputs: outputs => node('test-outputs', JSON.stringify(outputs)),
    openSession: id => opened.push(`session ${id}`),
    openRefinement: id => opened.push(`refinement ${id}`)
  };
}

const registry = new EventRendererRegistry();

function render<K extends EventKind>(kind: K, data: EventDataMap[K], opened: string[] = []): HTMLElement {
  return registry.render(E(kind, data, 7) as TrajectoryEvent, context(opened)).node;
}

const head = (node: HTMLElement) => node.querySelector('.jp-PrimeEvent-head')?.textContent ?? '';
const summary = <K extends EventKind>(kind: K, data: EventDataMap[K]) => registry.summary(E(kind, data) as TrajectoryEvent, untranslated);

describe('the renderer registry', () => {
  it('has a renderer for every event kind of the protocol', () => {
    for (const kind of EVENT_KINDS) {
      expect(registry.get(kind)).toBeDefined();
    }
    expect(registry.kinds().sort()).toEqual([...EVENT_KINDS].sort());
    expect(Object.keys(RENDERERS).sort()).toEqual([...EVENT_KINDS].sort());
  });

  it('builds the item: kind class, seq, a head whose tooltip is the summary', () => {
    const node = render('error', { message: 'boom\nmore' });
    expect(node.classList).toContain('jp-PrimeEvent');
    expect(node.classList).toContain('jp-PrimeEvent-error');
    expect(node.dataset.seq).toBe('7');
    expect(node.dataset.kind).toBe('error');
    expect(node.querySelector('.jp-PrimeEvent-head')!.getAttribute('title')).toMatch(/^#7 .* · error: boom$/);
  });

  it('lets another extension replace a renderer, and puts the old one back', () => {
    const done = registry.set('error', { summary: () => 'mine', render: () => ({ head: ['custom'] }) });
    expect(head(render('error', { message: 'x' }))).toBe('custom');
    done.dispose();
    expect(head(render('error', { message: 'x' }))).toBe('Error');
  });

  it('shows an unknown kind (from a newer daemon) as its data', () => {
    const event = { seq: 1, session_id: 's', ts: 0, kind: 'heartbeat', data: { target: 3 } } as unknown as TrajectoryEvent;
    const node = registry.render(event, context()).node;
    expect(head(node)).toBe('heartbeat');
    expect(node.querySelector('pre')!.textContent).toContain('"target": 3');
  });
});

describe('each renderer', () => {
  it('task: prompt, model, context and budget', () => {
    const node = render('task', { prompt: 'Sum it', model: 'm/x', budget: { tokens: 1000 }, context_type: 'list' });
    expect(head(node)).toBe('Task · m/x · context: list · budget: tokens 1k');
    expect(node.querySelector('.jp-PrimeEvent-prompt')!.textContent).toBe('Sum it');
    expect(summary('task', { prompt: 'Sum it\nnow' })).toBe('task: Sum it');
  });

  it('state: the new state as a badge, with its reason', () => {
    const node = render('state', { state: 'DONE', reason: 'answered' });
    expect(node.querySelector('[data-state="DONE"]')).not.toBeNull();
    expect(head(node)).toBe('→ DONE answered');
    expect(summary('state', { state: 'DONE', reason: 'answered' })).toBe('state → DONE (answered)');
  });

  it('model_call: names its model, tokens in and out, cost, duration', () => {
    const data = { model: 'scripted/ui-child', usage: { total_tokens: 1500, prompt_tokens: 1200, completion_tokens: 300 }, cost: 0.02, duration: 1.25, purpose: 'llm' };
    const node = render('model_call', data);
    expect(node.querySelector('.jp-PrimeEvent-model')!.textContent).toBe('scripted/ui-child');
    expect(head(node)).toBe('Model call · scripted/ui-child · llm() · 1.5k tok (1.2k in / 300 out) · $0.02 · 1.25s');
    expect(summary('model_call', data)).toBe('model call scripted/ui-child: 1.5k tok, $0.02');
    expect(head(render('model_call', { ...data, model: '' }))).toContain('(unknown model)');
  });

  it('assistant: the text as markdown; nothing for a turn of code only', () => {
    const node = render('assistant', { content: 'Let me **compute**' });
    expect(node.querySelector('.test-markdown')!.textContent).toBe('Let me **compute**');
    const empty = render('assistant', { content: '  ', tool_calls: [{ id: 'x' }] });
    expect(empty.classList).toContain('jp-mod-empty');
    expect(empty.querySelector('.jp-PrimeEvent-head')).toBeNull();
  });

  it('cell: count, source, status, duration, code and outputs', () => {
    const data = {
      code: 'x = 1\nx',
      source: 'user' as const,
      outputs: [{ output_type: 'execute_result' }],
      status: 'ok' as const,
      execution_count: 3,
      duration: 0.5,
      truncated_note: 'output cut'
    };
    const node = render('cell', data);
    expect(node.classList).toContain('jp-mod-user');
    expect(node.querySelector('.jp-PrimeEvent-source')!.textContent).toBe('user');
    expect(node.querySelector('.jp-PrimeEvent-status')!.textContent).toBe('ok');
    expect(head(node)).toBe('[3]userok 0.50s');
    expect(node.querySelector('.test-code')!.textContent).toBe('x = 1\nx');
    expect(node.querySelector('.test-outputs')!.textContent).toContain('execute_result');
    expect(node.querySelector('.jp-PrimeEvent-note')!.textContent).toBe('output cut');
    expect(summary('cell', data)).toBe('user cell [3] ok');
    expect(render('cell', { ...data, source: 'agent', outputs: [] }).querySelector('.test-outputs')).toBeNull();
  });

  it('observation: what the model was shown, folded', () => {
    const node = render('observation', { text: 'x is 42' });
    expect(node.querySelector('details pre')!.textContent).toBe('x is 42');
    expect(summary('observation', { text: 'x is 42' })).toBe('observation: x is 42');
  });

  it('answer: the repr; a reply as markdown', () => {
    const node = render('answer', { repr: '42', kind: 'answer' });
    expect(head(node)).toBe('Answer');
    expect(node.querySelector('.jp-PrimeEvent-answerRepr')!.textContent).toBe('42');
    expect(render('answer', { repr: 'hi *there*', kind: 'reply' }).querySelector('.test-markdown')!.textContent).toBe('hi *there*');
    expect(summary('answer', { repr: '42', kind: 'answer' })).toBe('answer: 42');
  });

  it('child: a link that opens the sub-agent', () => {
    const opened: string[] = [];
    const node = render('child', { child_id: 'sabcdef012', name: 'double', prompt: 'double 21' }, opened);
    expect(head(node)).toBe('Spawned sub-agent double');
    (node.querySelector('a') as HTMLAnchorElement).click();
    expect(opened).toEqual(['session sabcdef012']);
    expect(summary('child', { child_id: 'sabcdef012', prompt: 'p' })).toBe('spawned sabcdef012');
  });

  it('mail_in and mail_out: who, linked when a session, and the message', () => {
    const opened: string[] = [];
    const inbound = render('mail_in', { from: 'sabcdef012', sender: 'child', message: 'done', message_id: 'm1' }, opened);
    expect(head(inbound)).toBe('Message from child');
    (inbound.querySelector('a') as HTMLAnchorElement).click();
    expect(opened).toEqual(['session sabcdef012']);
    const person = render('mail_in', { from: 'user', sender: 'user', message: 'hi', message_id: 'm2' });
    expect(person.querySelector('a')).toBeNull();
    expect(person.querySelector('.jp-PrimeEvent-message')!.textContent).toBe('hi');
    expect(head(render('mail_out', { to: 'parent', message: 'half done', message_id: 'm3' }))).toBe('Message to parent');
    expect(summary('mail_out', { to: 'parent', message: 'half\ndone', message_id: 'm3' })).toBe('message to parent: half');
  });

  it('compaction: how much was summarised, why, and the summary', () => {
    const data = { before_tokens: 5200, after_tokens: 1100, summarised_messages: 12, summary: 'we computed x', reason: 'requested' as const };
    const node = render('compaction', data);
    expect(head(node)).toBe('Context compacted · 12 earlier messages summarised · 5.2k → 1.1k tok · asked for with compact()');
    expect(node.querySelector('details pre')!.textContent).toBe('we computed x');
    expect(head(render('compaction', { summarised_messages: 1, reason: 'window' }))).toBe(
      'Context compacted · 1 earlier message summarised · the model’s window was full'
    );
    expect(render('compaction', { ...data, error: 'no summary' }).querySelector('.jp-PrimeEvent-errorText')!.textContent).toBe('no summary');
    expect(summary('compaction', data)).toBe('context compacted: 12 earlier messages summarised');
  });

  it('snapshot: how many variables, the size, what was not saved', () => {
    const data = { blob_id: 'b1', size: 2048, saved: ['x', 'y'], skipped: { f: 'a generator' }, reason: 'idle' };
    const node = render('snapshot', data);
    expect(head(node)).toBe('REPL saved · 2 variables · 2 kB · idle');
    expect(node.textContent).toContain('saved: x, y');
    expect(node.textContent).toContain('not saved: f (a generator)');
    expect(summary('snapshot', data)).toBe('REPL saved: 2 variables');
  });

  it('restore: what came back and what did not', () => {
    const data = { restored: ['x'], failed: { y: 'unpickling failed' }, lost: ['z'], reason: 'revived' };
    const node = render('restore', data);
    expect(head(node)).toBe('REPL restored · 1 variable · revived');
    expect(node.textContent).toContain('restored: x');
    expect(node.textContent).toContain('failed: y (unpickling failed)');
    expect(node.textContent).toContain('lost: z');
    expect(summary('restore', data)).toBe('REPL restored: 1 variable');
  });

  it('resume: why, what was in flight and lost', () => {
    const node = render('resume', { reason: 'the daemon restarted', in_flight: 'a cell', lost: ['tmp'] });
    expect(head(node)).toBe('Resumed · the daemon restarted');
    expect(node.textContent).toContain('in flight: a cell');
    expect(node.textContent).toContain('lost: tmp');
    expect(summary('resume', { reason: 'the daemon restarted' })).toBe('resumed: the daemon restarted');
  });

  it('kernel: what happened to it, exit code, signal, detail', () => {
    const node = render('kernel', { event: 'died', exit_code: 1, signal: 'SIGKILL', detail: 'out of memory' });
    expect(head(node)).toBe('Kernel died · exit code 1 · signal SIGKILL');
    expect(node.querySelector('.jp-PrimeEvent-note')!.textContent).toBe('out of memory');
    expect(summary('kernel', { event: 'restarted' })).toBe('kernel restarted');
  });

  it('refinement: its id links to the Harness view, with its status', () => {
    const opened: string[] = [];
    const node = render('refinement', { refinement_id: 'r42', status: 'proposed' }, opened);
    expect(head(node)).toBe('Harness refined · r42 · proposed');
    (node.querySelector('a') as HTMLAnchorElement).click();
    expect(opened).toEqual(['refinement r42']);
    expect(summary('refinement', { refinement_id: 'r42', status: 'proposed' })).toBe('harness refinement r42: proposed');
  });

  it('verified: the verdict, by whom, what was learned (its proposal linked) or why not', () => {
    const opened: string[] = [];
    const learned = { refinement_id: 'r7', status: 'applied', entry: 'example/sum-square' };
    const right = render('verified', { correct: true, by: 'user', learned }, opened);
    expect(right.classList).toContain('jp-mod-right');
    expect(head(right)).toBe('Verified right · by you · learned example/sum-square (r7, applied)');
    (right.querySelector('a') as HTMLAnchorElement).click();
    expect(opened).toEqual(['refinement r7']);
    const wrong = render('verified', { correct: false, by: 'checker bench', note: 'off by one', refused: 'no code' });
    expect(wrong.classList).toContain('jp-mod-wrong');
    expect(head(wrong)).toBe('Verified wrong · by checker bench');
    expect([...wrong.querySelectorAll('.jp-PrimeEvent-note')].map(n => n.textContent)).toEqual(['off by one', 'Nothing learned: no code']);
    expect(summary('verified', { correct: false, by: 'gate `pytest`' })).toBe('answer verified wrong by gate `pytest`');
  });

  it('goal: set, progress, done and cleared, by whom (another session linked)', () => {
    const opened: string[] = [];
    const set = render('goal', { event: 'set', text: 'Pass the tests', by: 'user' });
    expect(set.classList).toContain('jp-mod-set');
    expect(head(set)).toBe('Goal set · by you');
    expect(set.querySelector('.jp-PrimeEvent-goalText')!.textContent).toBe('Pass the tests');
    expect(summary('goal', { event: 'set', text: 'Pass the tests\nall', by: 'user' })).toBe('goal set: Pass the tests');

    // The event's own session is "this agent"; its parent is a link.
    const progress = render('goal', { event: 'progress', note: '3 of 5 pass', by: 's0123456789' });
    expect(head(progress)).toBe('Progress on the goal · by this agent');
    expect(progress.querySelector('.jp-PrimeEvent-goalText')!.textContent).toBe('3 of 5 pass');
    const byParent = render('goal', { event: 'progress', note: 'x', by: 'sfedcba9876' }, opened);
    (byParent.querySelector('a') as HTMLAnchorElement).click();
    expect(opened).toEqual(['session sfedcba9876']);
    expect(summary('goal', { event: 'progress', note: '3 of 5 pass', by: 'user' })).toBe('goal progress: 3 of 5 pass');

    const done = render('goal', { event: 'done', text: 'Pass the tests', summary: 'all 5 pass', by: 's0123456789' });
    expect(head(done)).toBe('Goal done · by this agent');
    expect(done.querySelector('.jp-PrimeEvent-goalSummary')!.textContent).toBe('summary: all 5 pass');
    expect(summary('goal', { event: 'done', text: 'Pass the tests', summary: 'all 5 pass', by: 'user' })).toBe('goal done: all 5 pass');

    const cleared = render('goal', { event: 'cleared', text: 'Pass the tests', by: 'user' });
    expect(head(cleared)).toBe('Goal cleared · by you');
    expect(cleared.querySelector('.jp-PrimeEvent-goalText.jp-mod-cleared')!.textContent).toBe('Pass the tests');
    expect(summary('goal', { event: 'cleared', by: 'user' })).toBe('goal cleared');
  });

  it('continuation: which of how many, its limits, the gate, why the previous one ended', () => {
    const data = { continuation: 2, of: 3, limits: { turns: 12, tokens: 80000, seconds: 1800 }, gate: '`pytest -q`', reason: 'it answered' };
    const node = render('continuation', data);
    expect(head(node)).toBe('Continuation 2 of 3 · 12 turns · 80k tok · 30m · gate: `pytest -q`');
    expect(node.querySelector('.jp-PrimeEvent-note')!.textContent).toBe('the previous one ended: it answered');
    expect(render('continuation', { continuation: 1, of: 3 }).querySelector('.jp-PrimeEvent-note')).toBeNull();
    expect(summary('continuation', data)).toBe('continuation 2 of 3');
  });

  it('gate: passed or failed, what ran, the exit status, the output (open when it failed)', () => {
    const failed = { continuation: 1, passed: false, kind: 'shell' as const, command: 'pytest -q', exit_code: 1, output: '1 failed', duration: 0.5, ended: 'it answered' };
    const node = render('gate', failed);
    expect(node.classList).toContain('jp-mod-failed');
    expect(head(node)).toBe('Gate failed · pytest -q · exit status 1 · after continuation 1 · 0.50s');
    expect(node.querySelector('details')!.hasAttribute('open')).toBe(true);
    expect(node.querySelector('details pre')!.textContent).toBe('1 failed');
    expect(node.textContent).toContain('the continuation ended: it answered');
    expect(summary('gate', failed)).toBe('gate failed: pytest -q');

    const passed = render('gate', { ...failed, passed: true, exit_code: 0 });
    expect(passed.classList).toContain('jp-mod-passed');
    expect(passed.querySelector('details')!.hasAttribute('open')).toBe(false);

    const late = render('gate', { continuation: 2, passed: false, kind: 'python', command: 'done()', timed_out: true, error: 'the gate did not finish in 5 s' });
    expect(head(late)).toBe('Gate failed · done() · timed out · after continuation 2');
    const answer = { continuation: 1, passed: false, kind: 'answer' as const, error: 'no answer yet' };
    expect(head(render('gate', answer))).toBe('Gate failed · an answer · no answer yet · after continuation 1');
    expect(render('gate', answer).querySelector('.jp-PrimeEvent-errorText')!.textContent).toBe('no answer yet');
    expect(summary('gate', { ...answer, passed: true })).toBe('gate passed: an answer');
  });

  it('schedule: made (timing, target, owner, message), cancelled, a tick skipped (the reason)', () => {
    const opened: string[] = [];
    const created = {
      event: 'created' as const,
      schedule_id: 'h1',
      kind: 'every' as const,
      spec: '600.0',
      message: 'check the build',
      owner: 's0123456789',
      target_id: 'sfedcba9876',
      next: 1_700_000_600
    };
    const node = render('schedule', created, opened);
    expect(head(node)).toBe(
      `Schedule made · every 10m · → sfedcba9876 · by this agent · first tick ${new Date(1_700_000_600_000).toLocaleTimeString()}`
    );
    expect(node.querySelector('.jp-PrimeEvent-message')!.textContent).toBe('check the build');
    (node.querySelector('a') as HTMLAnchorElement).click();
    expect(opened).toEqual(['session sfedcba9876']);
    const mine = { ...created, owner: 'user', target_id: 's0123456789' };
    expect(head(render('schedule', { ...mine, event: 'cancelled', reason: 'cancelled by a person' }))).toBe('Schedule cancelled · every 10m · by you');
    const skipped = render('schedule', { event: 'skipped', schedule_id: 'h1', reason: 'budget spent' });
    expect(head(skipped)).toBe('Tick skipped');
    expect(skipped.querySelector('.jp-PrimeEvent-note')!.textContent).toBe('budget spent');
    expect(skipped.querySelector('.jp-PrimeEvent-message')).toBeNull();
    expect(summary('schedule', { event: 'skipped', schedule_id: 'h1', reason: 'budget spent' })).toBe('schedule h1 skipped: budget spent');
    expect(summary('schedule', created)).toBe('schedule h1 created');
  });

  it('gc: why, what was spilled (with sizes) and dropped, what failed', () => {
    const data = {
      reason: 'requested' as const,
      spilled: [{ name: 'arr', size: 50_000_000, blob_id: 'b1' }],
      dropped: ['tmp', 'old'],
      failed: { f: 'a function' }
    };
    const node = render('gc', data);
    expect(head(node)).toBe('Memory · gc() in the REPL · 1 value spilled to disk (50 MB) · 2 dropped');
    expect(node.textContent).toContain('spilled: arr (50 MB)');
    expect(node.textContent).toContain('dropped: tmp, old');
    expect(node.textContent).toContain('failed: f (a function)');
    expect(head(render('gc', { reason: 'passivation', spilled: [] }))).toBe('Memory · before passivation');
    expect(summary('gc', data)).toBe('memory (requested): spilled arr; dropped tmp, old');
    expect(summary('gc', { reason: 'compaction' })).toBe('memory (compaction): nothing');
  });

  it('error: the message', () => {
    const node = render('error', { message: 'could not snapshot' });
    expect(head(node)).toBe('Error');
    expect(node.querySelector('.jp-PrimeEvent-errorText')!.textContent).toBe('could not snapshot');
  });
});
