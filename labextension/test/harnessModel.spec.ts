/**
 * The Harness view's model against a daemon's harness routes kept in memory: what it loads,
 * what a change reloads, and that a slow answer for an entry no longer selected is dropped.
 */
import { HarnessModel } from '../src/harnessModel';
import type {
  IEntryUpdate,
  IHarnessEntry,
  IHarnessVersion,
  INewEntry,
  IPrimeAPI,
  IRefinement,
  ReviewAction
} from '../src/tokens';

/** The harness routes of a daemon: entries with their versions, and refinements. */
class FakeHarness {
  entries = new Map<string, IHarnessEntry>();
  history = new Map<string, IHarnessVersion[]>();
  refinementList: IRefinement[] = [];
  calls: string[] = [];
  /** When set, an entry's GET waits for this (to answer after another selection). */
  hold: Promise<void> | null = null;
  up = true;

  put(kind: string, id: string, content: string): IHarnessEntry {
    const key = `${kind}/${id}`;
    const versions = this.history.get(key) ?? [];
    const version = versions.length + 1;
    const entry: IHarnessEntry = { kind, id, scope: 'project', path: `${kind}/${id}.md`, version, content };
    this.entries.set(key, entry);
    this.history.set(key, [
      ...versions,
      { kind, id, scope: 'project', version, op: version === 1 ? 'create' : 'update', author: 'user', ts: version }
    ]);
    return entry;
  }

  api(): IPrimeAPI {
    const known = (kind: string, id: string): IHarnessEntry => {
      const entry = this.entries.get(`${kind}/${id}`);
      if (!entry) {
        throw new Error(`404 ${kind}/${id}`);
      }
      return entry;
    };
    return {
      harness: async () => {
        this.calls.push('harness');
        if (!this.up) {
          throw new Error('404 harness');
        }
        return { entries: [...this.entries.values()], errors: [], policy: 'review', roots: {} };
      },
      refinements: async () => {
        this.calls.push('refinements');
        return this.refinementList;
      },
      harnessEntry: async (kind: string, id: string) => {
        this.calls.push(`entry ${kind}/${id}`);
        const entry = known(kind, id);
        await this.hold;
        return entry;
      },
      harnessHistory: async (kind: string, id: string) => [...(this.history.get(`${kind}/${id}`) ?? [])].reverse(),
      harnessCreate: async (body: INewEntry) => this.put(body.kind, body.id, body.content ?? ''),
      harnessUpdate: async (kind: string, id: string, body: IEntryUpdate) => {
        known(kind, id);
        return this.put(kind, id, body.content ?? '');
      },
      harnessDiff: async (kind: string, id: string, a: number, b?: number) => `${kind}/${id} ${a}..${b}`,
      harnessRollback: async (kind: string, id: string, version: number, reason: string) => {
        this.calls.push(`rollback ${kind}/${id} to ${version}: ${reason}`);
        this.put(kind, id, known(kind, id).content ?? '');
        return this.history.get(`${kind}/${id}`)!.at(-1)!;
      },
      refine: async () => {
        const r: IRefinement = { id: `r${this.refinementList.length + 1}`, status: 'pending', edits: [] };
        this.refinementList = [r, ...this.refinementList];
        return r;
      },
      reviewRefinement: async (rid: string, action: ReviewAction, edits?: number[]) => {
        this.calls.push(`review ${rid} ${action} ${JSON.stringify(edits)}`);
        return this.refinementList.find(r => r.id === rid)!;
      }
    } as unknown as IPrimeAPI;
  }
}

describe('HarnessModel', () => {
  let daemon: FakeHarness;
  let model: HarnessModel;
  let changes: number;

  beforeEach(() => {
    daemon = new FakeHarness();
    daemon.put('note', 'style', 'one');
    daemon.put('note', 'style', 'two');
    daemon.put('skill', 'csv', 'read it');
    model = new HarnessModel(daemon.api());
    changes = 0;
    model.changed.connect(() => changes++);
  });

  afterEach(() => model.dispose());

  it('asks once whether the daemon serves the harness', async () => {
    expect(await model.available()).toBe(true);
    expect(await model.available()).toBe(true);
    expect(daemon.calls.filter(c => c === 'harness')).toHaveLength(1);

    daemon.up = false;
    const other = new HarnessModel(daemon.api());
    expect(await other.available()).toBe(false);
    other.dispose();
  });

  it('loads the entries, then a selected entry and its history', async () => {
    await model.refresh();
    expect(model.listing!.entries.map(e => `${e.kind}/${e.id}`)).toEqual(['note/style', 'skill/csv']);
    expect(model.selected).toBeNull();

    await model.select('note', 'style');
    expect(model.selected).toEqual({ kind: 'note', id: 'style' });
    expect(model.entry!.content).toBe('two');
    expect(model.versions.map(v => v.version)).toEqual([2, 1]);
    expect(changes).toBe(3); // the listing, the selection, the loaded entry
  });

  it('keeps the later selection when an earlier one answers last', async () => {
    let release!: () => void;
    daemon.hold = new Promise(resolve => (release = resolve));
    const slow = model.select('note', 'style');
    daemon.hold = null;
    await model.select('skill', 'csv');
    release();
    await slow;
    expect(model.selected).toEqual({ kind: 'skill', id: 'csv' });
    expect(model.entry!.id).toBe('csv');
  });

  it('deselects an entry that is gone when it reloads', async () => {
    await model.select('skill', 'csv');
    daemon.entries.delete('skill/csv');
    await model.refresh();
    expect(model.selected).toBeNull();
    expect(model.entry).toBeNull();
    expect(model.versions).toEqual([]);
  });

  it('selects what it creates, and reloads what a save changed', async () => {
    const made = await model.create({
      kind: 'note',
      id: '',
      title: 'Units First',
      content: 'convert()',
      metadata: '',
      scope: 'project'
    });
    expect(made.id).toBe('units-first');
    expect(model.selected).toEqual({ kind: 'note', id: 'units-first' });
    expect(model.entry!.content).toBe('convert()');
    expect(model.listing!.entries).toHaveLength(3);

    await model.update('note', 'units-first', { content: 'convert() first', scope: 'project', reason: 'r' });
    expect(model.entry!.content).toBe('convert() first');
    expect(model.versions.map(v => v.version)).toEqual([2, 1]);
  });

  it('diffs a version against the one before it, and not the first', async () => {
    expect(await model.diff(2)).toBeNull(); // nothing selected
    await model.select('note', 'style');
    expect(await model.diff(2)).toEqual({ pair: [1, 2], diff: 'note/style 1..2' });
    expect(await model.diff(1)).toBeNull();
  });

  it('rolls back the selected entry only', async () => {
    expect(await model.rollback(1, 'why')).toBeNull();
    expect(daemon.calls.some(c => c.startsWith('rollback'))).toBe(false);

    await model.select('note', 'style');
    const v = await model.rollback(1, 'too long');
    expect(v!.version).toBe(3);
    expect(daemon.calls).toContain('rollback note/style to 1: too long');
    expect(model.versions.map(x => x.version)).toEqual([3, 2, 1]);
  });

  it('reviews one edit or every pending one, and reloads the refinements', async () => {
    const r = await model.refine();
    expect(model.refinements.map(x => x.id)).toEqual([r.id]);
    await model.review(r.id, 'approve', 2);
    await model.review(r.id, 'reject');
    expect(daemon.calls.filter(c => c.startsWith('review'))).toEqual([
      `review ${r.id} approve [2]`,
      `review ${r.id} reject undefined`
    ]);
  });
});
