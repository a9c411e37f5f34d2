import type { Session } from '../src/protocol';
import { buildTree, countByState, filterTree, flattenTree, isInSubtree, visibleRange } from '../src/tree';
import { S } from './fixtures';

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

  it('orders roots by creation time (epoch seconds), newest first', () => {
    const forest = buildTree([S('old', { created: 1_767_225_600 }), S('new', { created: 1_780_272_000.5 })]);
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
    const many: Session[] = [];
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

describe('isInSubtree', () => {
  it('knows subtree membership', () => {
    const list = [S('r'), S('c', { parent_id: 'r' }), S('g', { parent_id: 'c' }), S('x')];
    expect(isInSubtree(list, 'r', 'g')).toBe(true);
    expect(isInSubtree(list, 'c', 'r')).toBe(false);
    expect(isInSubtree(list, 'r', 'x')).toBe(false);
  });
});
