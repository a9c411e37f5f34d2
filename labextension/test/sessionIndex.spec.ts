import { SESSION_EVENT_SCHEMA } from '../src/protocol';
import { consoleUnavailable, lastSeq, mergeEvents, sessionNotification, SessionIndex, sumUsage } from '../src/sessionIndex';
import { E, S, U } from './fixtures';

describe('SessionIndex', () => {
  it('replaces everything with a full list, keeps the array until a change', () => {
    const index = new SessionIndex();
    index.reset([S('a'), S('b')]);
    const values = index.values();
    expect(values.map(s => s.id)).toEqual(['a', 'b']);
    expect(index.values()).toBe(values);
    index.reset([S('c')]);
    expect(index.values().map(s => s.id)).toEqual(['c']);
    expect(index.get('a')).toBeUndefined();
  });

  it('merges changed records by id, appending new ones, without changing the old objects', () => {
    const index = new SessionIndex();
    const a = S('a');
    index.reset([a, S('b')]);
    const changed = index.merge([S('b', { state: 'DONE' }), S('c')]);
    expect([...changed].sort()).toEqual(['b', 'c']);
    expect(index.values().map(s => [s.id, s.state])).toEqual([
      ['a', 'RUNNING'],
      ['b', 'DONE'],
      ['c', 'RUNNING']
    ]);
    expect(index.get('a')).toBe(a);
  });

  it("sums an ancestor's subtree usage again when only a descendant changed", () => {
    const index = new SessionIndex();
    const usage = (own: number, subtree: number) => ({ own: U({ total_tokens: own, cost: own / 1000 }), subtree: U({ total_tokens: subtree, cost: subtree / 1000 }) });
    index.reset([
      S('r', { depth: 0, usage: usage(10, 60) }),
      S('c', { parent_id: 'r', depth: 1, usage: usage(20, 50) }),
      S('g', { parent_id: 'c', depth: 2, usage: usage(30, 30) }),
      S('s', { parent_id: 'r', depth: 1, usage: usage(0, 0) })
    ]);
    // The grandchild spent 100 more tokens; the daemon sends only its record.
    const changed = index.merge([S('g', { parent_id: 'c', depth: 2, usage: usage(130, 130) })]);
    expect([...changed].sort()).toEqual(['c', 'g', 'r']);
    expect(index.get('c')!.usage.subtree.total_tokens).toBe(150);
    expect(index.get('r')!.usage.subtree.total_tokens).toBe(160);
    expect(index.get('r')!.usage.subtree.cost).toBeCloseTo(0.16);
    expect(index.get('r')!.usage.own.total_tokens).toBe(10);
    // A new child counts in its parent's subtree at once.
    index.merge([S('n', { parent_id: 's', depth: 2, usage: usage(5, 5) })]);
    expect(index.get('s')!.usage.subtree.total_tokens).toBe(5);
    expect(index.get('r')!.usage.subtree.total_tokens).toBe(165);
    expect([...index.childIds('s')]).toEqual(['n']);
  });

  it('patches a state from a push notification', () => {
    const index = new SessionIndex();
    index.reset([S('a'), S('b')]);
    const before = index.values();
    expect(index.patchState('b', 'IDLE')).toBe(true);
    expect(index.get('b')!.state).toBe('IDLE');
    expect(index.values()).not.toBe(before);
    expect(index.patchState('b', 'IDLE')).toBe(false);
    expect(index.patchState('zzz', 'DONE')).toBe(false);
  });

  it('merges one change into 1,000 sessions, re-summing its ancestors', () => {
    const index = new SessionIndex();
    const many = Array.from({ length: 1000 }, (_, i) =>
      S(`s${i}`, { parent_id: i % 10 ? `s${i - (i % 10)}` : null, depth: i % 10 ? 1 : 0 })
    );
    index.reset(many);
    // How long this takes is measured in the browser test, on a real page; here, what it does.
    index.merge([S('s5', { parent_id: 's0', depth: 1, state: 'DONE', usage: { own: U({ total_tokens: 9 }), subtree: U({ total_tokens: 9 }) } })]);
    expect(index.get('s0')!.usage.subtree.total_tokens).toBe(9);
    expect(index.get('s5')!.state).toBe('DONE');
  });
});

describe('helpers', () => {
  it('sums usages field by field', () => {
    expect(sumUsage([U({ total_tokens: 1, cells: 2 }), U({ total_tokens: 3, cells: 1 })])).toEqual(U({ total_tokens: 4, cells: 3 }));
  });

  it('recognises our event-bus schema', () => {
    const note = { schema_id: SESSION_EVENT_SCHEMA, session_id: 'a', kind: 'state', state: 'IDLE', seq: 3 };
    expect(sessionNotification(note)).toBe(note);
    expect(sessionNotification({ schema_id: 'https://events.jupyter.org/other' })).toBeNull();
  });

  it('merges event pages by seq', () => {
    const ev = (seq: number) => E('state', { state: 'RUNNING' }, seq);
    const out = mergeEvents([ev(1), ev(2)], [ev(4), E('observation', { text: 'x' }, 2), ev(3)]);
    expect(out.map(e => e.seq)).toEqual([1, 2, 3, 4]);
    expect(out[1].kind).toBe('observation');
    expect(lastSeq(out)).toBe(4);
    expect(lastSeq([])).toBe(0);
  });

  it('says why no console can attach', () => {
    expect(consoleUnavailable(S('a', { kernel_id: 'k', kernel_alive: true }))).toBeNull();
    expect(consoleUnavailable(S('a', { kernel_id: 'k', kernel_alive: false, state: 'DONE' }))).toBe('kernel-gone');
    expect(consoleUnavailable(S('a', { kernel_id: null }))).toBe('no-kernel');
  });
});
