import {
  applyEmission,
  buildTree,
  Coalescer,
  consoleAvailability,
  countByState,
  elapsedSeconds,
  exportBaseName,
  exportChoices,
  exportedNotebook,
  exportPath,
  filterTree,
  flattenTree,
  formatCost,
  formatElapsed,
  formatTokens,
  formatBudget,
  formatUsage,
  IEvent,
  isInSubtree,
  KERNEL_GONE,
  isSessionEmission,
  ISession,
  lastSeq,
  mergeEvents,
  mergeSessions,
  parseBudget,
  SESSION_EVENT_SCHEMA,
  slug,
  sessionLabel,
  summarizeEvent,
  toMillis,
  visibleRange
} from '../src/model';

function S(id: string, extra: Partial<ISession> = {}): ISession {
  return { id, state: 'RUNNING', parent_id: null, created: 1000, ...extra };
}

describe('sessionLabel', () => {
  const base: ISession = { id: 's1', state: 'RUNNING' };
  it('prefers the name', () => {
    expect(sessionLabel({ ...base, name: ' root ', prompt: 'x' })).toBe('root');
  });
  it('falls back to the first words of the prompt', () => {
    expect(
      sessionLabel({ ...base, prompt: 'one two  three four five six seven eight nine ten' })
    ).toBe('one two three four five six seven eight…');
    expect(sessionLabel({ ...base, prompt: 'short\nprompt' })).toBe('short prompt');
  });
  it('falls back to the id', () => {
    expect(sessionLabel(base)).toBe('s1');
    expect(sessionLabel({ ...base, name: '  ', prompt: '' })).toBe('s1');
  });
});

describe('buildTree', () => {
  it('nests children under parents, roots newest first, children in spawn order', () => {
    const sessions = [
      S('c2', { parent_id: 'r1', created: 30 }),
      S('r1', { created: 10 }),
      S('r2', { created: 20 }),
      S('c1', { parent_id: 'r1', created: 25 }),
      S('g1', { parent_id: 'c1', created: 40 })
    ];
    const forest = buildTree(sessions);
    expect(forest.map(n => n.session.id)).toEqual(['r2', 'r1']);
    const r1 = forest[1];
    expect(r1.children.map(n => n.session.id)).toEqual(['c1', 'c2']);
    expect(r1.children[0].children[0].session.id).toBe('g1');
    expect(r1.children[0].children[0].depth).toBe(2);
  });

  it('treats sessions whose parent is missing as roots', () => {
    const forest = buildTree([S('c', { parent_id: 'gone' }), S('r')]);
    expect(forest.map(n => n.session.id).sort()).toEqual(['c', 'r']);
  });

  it('survives parent cycles and self-parents without losing sessions', () => {
    const forest = buildTree([
      S('a', { parent_id: 'b' }),
      S('b', { parent_id: 'a' }),
      S('self', { parent_id: 'self' })
    ]);
    const ids = flattenTree(forest).map(r => r.session.id).sort();
    expect(ids).toEqual(['a', 'b', 'self']);
  });

  it('dedupes repeated ids (last wins)', () => {
    const forest = buildTree([S('a', { state: 'RUNNING' }), S('a', { state: 'DONE' })]);
    expect(forest).toHaveLength(1);
    expect(forest[0].session.state).toBe('DONE');
  });

  it('accepts ISO timestamps for ordering', () => {
    const forest = buildTree([
      S('old', { created: '2026-01-01T00:00:00Z' }),
      S('new', { created: '2026-06-01T00:00:00Z' })
    ]);
    expect(forest.map(n => n.session.id)).toEqual(['new', 'old']);
  });
});

describe('filterTree / flattenTree', () => {
  const sessions = [
    S('r1', { created: 1, state: 'IDLE', name: 'summarise book' }),
    S('c1', { parent_id: 'r1', created: 2, state: 'DONE', name: 'chapter one' }),
    S('c2', { parent_id: 'r1', created: 3, state: 'FAILED', name: 'chapter two' }),
    S('r2', { created: 0, state: 'DONE', name: 'other' })
  ];
  const forest = buildTree(sessions);

  it('keeps everything with an empty filter', () => {
    const rows = flattenTree(filterTree(forest, {}));
    expect(rows.map(r => r.session.id)).toEqual(['r1', 'c1', 'c2', 'r2']);
    expect(rows.every(r => r.matches)).toBe(true);
    expect(rows[0]).toMatchObject({ depth: 0, hasChildren: true, descendants: 2 });
  });

  it('filters by state keeping ancestors as context', () => {
    const rows = flattenTree(filterTree(forest, { states: new Set(['FAILED']) }));
    expect(rows.map(r => [r.session.id, r.matches])).toEqual([
      ['r1', false],
      ['c2', true]
    ]);
  });

  it('filters by several states', () => {
    const rows = flattenTree(filterTree(forest, { states: new Set(['DONE', 'IDLE']) }));
    expect(rows.map(r => r.session.id)).toEqual(['r1', 'c1', 'r2']);
  });

  it('filters by text (case-insensitive, name/prompt/id/model)', () => {
    expect(flattenTree(filterTree(forest, { text: 'CHAPTER' })).map(r => r.session.id)).toEqual([
      'r1',
      'c1',
      'c2'
    ]);
    expect(flattenTree(filterTree(forest, { text: 'r2' })).map(r => r.session.id)).toEqual(['r2']);
    expect(filterTree(forest, { text: 'nothing-like-this' })).toEqual([]);
  });

  it('hides children of collapsed nodes', () => {
    const rows = flattenTree(forest, new Set(['r1']));
    expect(rows.map(r => r.session.id)).toEqual(['r1', 'r2']);
    expect(rows[0]).toMatchObject({ collapsed: true, descendants: 2 });
    // collapsing a leaf is a no-op
    expect(flattenTree(forest, new Set(['c1'])).find(r => r.session.id === 'c1')!.collapsed).toBe(
      false
    );
  });

  it('handles hundreds of sessions quickly', () => {
    const many: ISession[] = [];
    for (let r = 0; r < 20; r++) {
      many.push(S(`r${r}`, { created: r }));
      for (let c = 0; c < 50; c++) {
        many.push(S(`r${r}c${c}`, { parent_id: `r${r}`, created: 100 + c, state: c % 2 ? 'DONE' : 'RUNNING' }));
      }
    }
    const t0 = Date.now();
    const rows = flattenTree(filterTree(buildTree(many), { states: new Set(['DONE']) }));
    expect(Date.now() - t0).toBeLessThan(500);
    expect(rows).toHaveLength(20 + 20 * 25);
  });
});

describe('countByState', () => {
  it('counts every state, zero for missing ones', () => {
    const c = countByState([S('a'), S('b', { state: 'DONE' }), S('c', { state: 'DONE' })]);
    expect(c.RUNNING).toBe(1);
    expect(c.DONE).toBe(2);
    expect(c.ADMITTED).toBe(0);
    expect(c.CANCELLED).toBe(0);
  });
});

describe('visibleRange', () => {
  it('computes the window with overscan', () => {
    expect(visibleRange(1000, 0, 460, 46, 5)).toEqual({ start: 0, end: 16 });
    expect(visibleRange(1000, 4600, 460, 46, 5)).toEqual({ start: 95, end: 116 });
  });
  it('clamps at the end and handles empty lists', () => {
    expect(visibleRange(10, 10000, 460, 46, 5)).toEqual({ start: 4, end: 10 });
    expect(visibleRange(0, 0, 460, 46)).toEqual({ start: 0, end: 0 });
    expect(visibleRange(3, -50, 460, 46)).toEqual({ start: 0, end: 3 });
  });
});

describe('formatting', () => {
  it('formats tokens', () => {
    expect(formatTokens(0)).toBe('0');
    expect(formatTokens(950)).toBe('950');
    expect(formatTokens(1000)).toBe('1k');
    expect(formatTokens(1234)).toBe('1.2k');
    expect(formatTokens(45678)).toBe('46k');
    expect(formatTokens(999_499)).toBe('999k');
    expect(formatTokens(999_999)).toBe('1M');
    expect(formatTokens(1_234_567)).toBe('1.2M');
    expect(formatTokens(2_500_000_000)).toBe('2.5B');
    expect(formatTokens(undefined)).toBe('—');
    expect(formatTokens(NaN)).toBe('—');
  });

  it('formats cost', () => {
    expect(formatCost(0)).toBe('$0');
    expect(formatCost(0.00001)).toBe('<$0.0001');
    expect(formatCost(0.00042)).toBe('$0.0004');
    expect(formatCost(0.123)).toBe('$0.12');
    expect(formatCost(12.345)).toBe('$12.35');
    expect(formatCost(1234.5)).toBe('$1,235');
    expect(formatCost(null)).toBe('—');
  });

  it('formats elapsed time', () => {
    expect(formatElapsed(0)).toBe('0s');
    expect(formatElapsed(4.7)).toBe('4s');
    expect(formatElapsed(185)).toBe('3m 05s');
    expect(formatElapsed(3720)).toBe('1h 02m');
    expect(formatElapsed(93600)).toBe('1d 2h');
    expect(formatElapsed(null)).toBe('—');
    expect(formatElapsed(-1)).toBe('—');
  });

  it('formats own and subtree usage', () => {
    const s = S('a', {
      usage: { own: { total_tokens: 1200, cost: 0.01 }, subtree: { total_tokens: 5000, cost: 0.05 } }
    });
    expect(formatUsage(s)).toBe('1.2k tok · $0.01 (Σ 5k · $0.05)');
    const leaf = S('b', {
      usage: { own: { total_tokens: 10, cost: 0 }, subtree: { total_tokens: 10, cost: 0 } }
    });
    expect(formatUsage(leaf)).toBe('10 tok · $0');
    expect(formatUsage(S('c'))).toBe('0 tok · $0');
  });
});

describe('time', () => {
  it('parses epoch seconds, epoch ms and ISO strings', () => {
    expect(toMillis(1_700_000_000)).toBe(1_700_000_000_000);
    expect(toMillis(1_700_000_000_000)).toBe(1_700_000_000_000);
    expect(toMillis('1700000000.5')).toBe(1_700_000_000_500);
    expect(toMillis('2026-01-01T00:00:00Z')).toBe(Date.UTC(2026, 0, 1));
    expect(toMillis(null)).toBeNull();
    expect(toMillis('not a date')).toBeNull();
  });

  it('computes elapsed seconds from started (or created) to ended (or now)', () => {
    expect(elapsedSeconds(S('a', { created: 100, started: 110, ended: 150 }), 0)).toBe(40);
    expect(elapsedSeconds(S('a', { created: 100, started: 110 }), 200_000)).toBe(90);
    expect(elapsedSeconds(S('a', { created: 100, started: null }), 130_000)).toBe(30);
    expect(elapsedSeconds(S('a', { created: null }), 0)).toBeNull();
    // a terminal session without an end time does not keep ticking
    expect(elapsedSeconds(S('a', { state: 'DONE', started: 100 }), 999_000)).toBeNull();
  });
});

describe('merging updates', () => {
  it('merges sessions by id, keeping order and appending new ones', () => {
    const a = [S('a', { state: 'RUNNING' }), S('b')];
    const out = mergeSessions(a, [S('b', { state: 'DONE' }), S('c')]);
    expect(out.map(s => [s.id, s.state])).toEqual([
      ['a', 'RUNNING'],
      ['b', 'DONE'],
      ['c', 'RUNNING']
    ]);
    expect(a[1].state).toBe('RUNNING'); // not mutated
  });

  it('applies a push event state change without a refetch', () => {
    const list = [S('a'), S('b')];
    const e = { schema_id: SESSION_EVENT_SCHEMA, session_id: 'b', kind: 'state', state: 'IDLE', seq: 3 };
    const out = applyEmission(list, e);
    expect(out).not.toBe(list);
    expect(out[1].state).toBe('IDLE');
    expect(applyEmission(out, e)).toBe(out); // no change: same array
    expect(applyEmission(list, { ...e, session_id: 'zzz' })).toBe(list);
    expect(applyEmission(list, { ...e, state: undefined })).toBe(list);
  });

  it('recognises our event-bus schema', () => {
    expect(isSessionEmission({ schema_id: SESSION_EVENT_SCHEMA, session_id: 'a' })).toBe(true);
    expect(isSessionEmission({ schema_id: 'https://events.jupyter.org/other' })).toBe(false);
    expect(isSessionEmission(null)).toBe(false);
  });

  it('merges event pages by seq', () => {
    const ev = (seq: number, kind = 'state'): IEvent => ({ seq, session_id: 'a', kind, data: {} });
    const out = mergeEvents([ev(1), ev(2)], [ev(4), ev(2, 'cell'), ev(3)]);
    expect(out.map(e => e.seq)).toEqual([1, 2, 3, 4]);
    expect(out[1].kind).toBe('cell');
    expect(lastSeq(out)).toBe(4);
    expect(lastSeq([])).toBe(0);
  });

  it('knows subtree membership', () => {
    const list = [S('r'), S('c', { parent_id: 'r' }), S('g', { parent_id: 'c' }), S('x')];
    expect(isInSubtree(list, 'r', 'g')).toBe(true);
    expect(isInSubtree(list, 'c', 'r')).toBe(false);
    expect(isInSubtree(list, 'r', 'x')).toBe(false);
  });
});

describe('parseBudget', () => {
  it('accepts empty inputs as no budget', () => {
    expect(parseBudget({})).toBeUndefined();
    expect(parseBudget({ tokens: '  ', dollars: ' ', seconds: '', turns: '' })).toBeUndefined();
  });
  it("sends the daemon's keys: tokens with k/M suffixes, dollars", () => {
    expect(parseBudget({ tokens: '50k' })).toEqual({ tokens: 50000 });
    expect(parseBudget({ tokens: '1.5M', dollars: '$0.50' })).toEqual({ tokens: 1_500_000, dollars: 0.5 });
    expect(parseBudget({ tokens: '200,000', dollars: '2' })).toEqual({ tokens: 200000, dollars: 2 });
  });
  it('parses seconds as durations and turns as counts', () => {
    expect(parseBudget({ seconds: '90' })).toEqual({ seconds: 90 });
    expect(parseBudget({ seconds: '10m', turns: '30' })).toEqual({ seconds: 600, turns: 30 });
    expect(parseBudget({ seconds: '1.5h' })).toEqual({ seconds: 5400 });
    expect(parseBudget({ seconds: '45s', turns: '1k' })).toEqual({ seconds: 45, turns: 1000 });
  });
  it('rejects bad input with a clear message', () => {
    expect(() => parseBudget({ tokens: 'lots' })).toThrow(/Token budget/);
    expect(() => parseBudget({ tokens: '0' })).toThrow(/positive/);
    expect(() => parseBudget({ dollars: '-1' })).toThrow(/Dollar budget/);
    expect(() => parseBudget({ dollars: 'abc' })).toThrow(/Dollar budget/);
    expect(() => parseBudget({ seconds: 'soon' })).toThrow(/Time limit/);
    expect(() => parseBudget({ seconds: '0' })).toThrow(/Time limit must be positive/);
    expect(() => parseBudget({ turns: '-3' })).toThrow(/Turn budget/);
  });
});

describe('formatBudget', () => {
  it('shows each limit in its unit and skips bookkeeping', () => {
    expect(formatBudget({ tokens: 50000, dollars: 0.5, seconds: 600, turns: 30 })).toBe(
      'tokens 50k, dollars $0.50, time 10m 00s, turns 30'
    );
    expect(formatBudget({ tokens: 1000, spent: { tokens: 3 } })).toBe('tokens 1k');
    expect(formatBudget(null)).toBe('');
  });
});

describe('export paths', () => {
  it('names the export after the session name, else its id', () => {
    expect(exportBaseName(S('abc123', { name: 'Fix the CSV loader!' }))).toBe('fix-the-csv-loader');
    expect(exportBaseName(S('abc123', { name: '???' }))).toBe('abc123');
    expect(exportBaseName(S('abc123'))).toBe('abc123');
    expect(slug('x'.repeat(30) + ' ' + 'y'.repeat(30))).toBe('x'.repeat(30) + '-' + 'y'.repeat(9));
  });
  it('tries <base>.ipynb, then numbered ones; a subtree is a folder', () => {
    expect(exportPath('report', false, 0)).toBe('report.ipynb');
    expect(exportPath('report', false, 2)).toBe('report-2.ipynb');
    expect(exportPath('report', true, 0)).toBe('report');
    expect(exportPath('report', true, 1)).toBe('report-1');
  });
  it("opens the session's own notebook of a subtree folder", () => {
    const folder = { session_id: 'r1', path: 'report', files: ['report/c1.ipynb', 'report/r1.ipynb'] };
    expect(exportedNotebook(folder, 'r1')).toBe('report/r1.ipynb');
    const single = { session_id: 'r1', path: 'report.ipynb', files: ['report.ipynb'] };
    expect(exportedNotebook(single, 'r1')).toBe('report.ipynb');
    expect(exportedNotebook({ session_id: 'r1', path: 'r1.ipynb', files: ['r1.ipynb'] }, 'r1')).toBe('r1.ipynb');
  });
  it('offers sub-agents when the session has children and context when it was given one', () => {
    const root = S('r', { context_type: 'DataFrame' });
    const child = S('c', { parent_id: 'r' });
    expect(exportChoices(root, [root, child])).toEqual({ subtree: true, withContext: true });
    expect(exportChoices(child, [root, child])).toEqual({ subtree: false, withContext: false });
    expect(exportChoices(S('x', { context_type: null }), [])).toEqual({ subtree: false, withContext: false });
  });
});

describe('consoleAvailability', () => {
  it('allows a console on a live kernel', () => {
    expect(consoleAvailability(S('a', { kernel_id: 'k', kernel_alive: true }))).toEqual({ enabled: true, reason: '' });
  });
  it('says why not when the kernel is shut down or there is none', () => {
    expect(consoleAvailability(S('a', { kernel_id: 'k', kernel_alive: false, state: 'DONE' }))).toEqual({
      enabled: false,
      reason: KERNEL_GONE
    });
    expect(KERNEL_GONE).toBe("the session's kernel has been shut down");
    expect(consoleAvailability(S('a', { kernel_id: null, kernel_alive: false })).enabled).toBe(false);
  });
});

describe('summarizeEvent', () => {
  it('summarises each kind in one line', () => {
    const e = (kind: string, data: any): IEvent => ({ seq: 1, session_id: 'a', kind, data });
    expect(summarizeEvent(e('state', { state: 'DONE', reason: 'answered' }))).toBe(
      'state → DONE (answered)'
    );
    expect(summarizeEvent(e('cell', { source: 'user', execution_count: 3, status: 'ok' }))).toBe(
      'user cell [3] ok'
    );
    expect(summarizeEvent(e('child', { child_id: 's2', name: 'ch1' }))).toBe('spawned ch1');
    expect(summarizeEvent(e('mail_in', { from: 'user', message: 'hi\nthere' }))).toBe(
      'mail from user: hi'
    );
    expect(summarizeEvent(e('answer', { repr: '42', kind: 'answer' }))).toBe('answer: 42');
    expect(summarizeEvent(e('model_call', { model: 'm', usage: { total_tokens: 1500 }, cost: 0.02 }))).toBe(
      'model call m: 1.5k tok, $0.02'
    );
    expect(summarizeEvent(e('weird', {}))).toBe('weird');
  });
});

describe('Coalescer', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('runs once for a burst of requests', async () => {
    let runs = 0;
    const c = new Coalescer(async () => {
      runs++;
    }, 100);
    const ps = [c.request(), c.request(), c.request()];
    expect(runs).toBe(0);
    await jest.advanceTimersByTimeAsync(100);
    await Promise.all(ps);
    expect(runs).toBe(1);
    c.dispose();
  });

  it('does not starve under a continuous stream of requests', async () => {
    let runs = 0;
    const c = new Coalescer(async () => {
      runs++;
    }, 100);
    for (let i = 0; i < 10; i++) {
      void c.request();
      await jest.advanceTimersByTimeAsync(50);
    }
    expect(runs).toBeGreaterThanOrEqual(4);
    expect(runs).toBeLessThanOrEqual(5);
    c.dispose();
  });

  it('never runs concurrently and reruns once for requests made while running', async () => {
    let active = 0;
    let maxActive = 0;
    let runs = 0;
    let release: () => void = () => undefined;
    const c = new Coalescer(async () => {
      active++;
      runs++;
      maxActive = Math.max(maxActive, active);
      await new Promise<void>(r => (release = r));
      active--;
    }, 10);
    void c.flush();
    await jest.advanceTimersByTimeAsync(0);
    expect(c.isRunning).toBe(true);
    const later = c.request();
    void c.request();
    await jest.advanceTimersByTimeAsync(50);
    expect(runs).toBe(1);
    release();
    await jest.advanceTimersByTimeAsync(10);
    expect(runs).toBe(2);
    release();
    await jest.advanceTimersByTimeAsync(0);
    await later;
    expect(maxActive).toBe(1);
    c.dispose();
  });

  it('flush runs without waiting', async () => {
    let runs = 0;
    const c = new Coalescer(async () => {
      runs++;
    }, 10_000);
    await c.flush();
    expect(runs).toBe(1);
    c.dispose();
  });
});
