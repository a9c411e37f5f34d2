import {
  canRollbackRefinement,
  canRollbackTo,
  conflictMessage,
  diffPair,
  diffStat,
  editLabel,
  entryDraft,
  entryFile,
  entryUpdate,
  groupEntries,
  kindUrl,
  parseDiff,
  parseMetadata,
  pendingEdits,
  relativeToRoot,
  sortRefinements,
  entryIdFor,
  KINDS,
  newEntryBody
} from '../src/harnessData';
import type { IHarnessEntry, IHarnessVersion, IRefinement } from '../src/tokens';

function E(kind: string, id: string, extra: Partial<IHarnessEntry> = {}): IHarnessEntry {
  return { kind, id, scope: 'project', path: `${kindUrl(kind)}/${id}.md`, ...extra };
}

function V(version: number, op = 'update'): IHarnessVersion {
  return { kind: 'note', id: 'n', scope: 'project', version, op, author: 'user', ts: version };
}

describe('groupEntries', () => {
  it('groups by kind in a fixed order, keeps empty kinds, sorts by id then project first', () => {
    const groups = groupEntries([
      E('skill', 'b'),
      E('note', 'z'),
      E('note', 'a', { scope: 'global' }),
      E('note', 'a'),
      E('subagent', 'reviewer')
    ]);
    expect(groups.map(g => g.kind)).toEqual(['note', 'memory', 'skill', 'subagent', 'example']);
    expect(groups[0].entries.map(e => `${e.id}/${e.scope}`)).toEqual(['a/project', 'a/global', 'z/project']);
    expect(groups[1].entries).toEqual([]);
    expect(groups[1].label).toBe('Memories');
  });
  it('filters by id, title and summary, case-insensitively', () => {
    const entries = [E('note', 'style', { title: 'House Style' }), E('memory', 'db', { summary: 'Postgres 15' })];
    const count = (t: string) => groupEntries(entries, t).reduce((n, g) => n + g.entries.length, 0);
    expect(count('house')).toBe(1);
    expect(count('POSTGRES')).toBe(1);
    expect(count('nothing')).toBe(0);
    expect(count('')).toBe(2);
  });
});

describe('entry files under the server root', () => {
  const roots = { project: '/srv/proj/.prime/harness', global: '/home/me/.prime/harness' };
  it('joins the scope root and the entry path, or uses file', () => {
    expect(entryFile(E('note', 'x'), roots)).toBe('/srv/proj/.prime/harness/notes/x.md');
    expect(entryFile(E('skill', 'y', { path: 'skills/y/SKILL.md', scope: 'global' }), roots)).toBe(
      '/home/me/.prime/harness/skills/y/SKILL.md'
    );
    expect(entryFile(E('note', 'x', { file: '/a/b.md' }), roots)).toBe('/a/b.md');
    expect(entryFile(E('note', 'x', { scope: 'elsewhere' }), roots)).toBeNull();
  });
  it('is relative to the root when inside it, null outside', () => {
    expect(relativeToRoot('/srv/proj/.prime/harness/notes/x.md', '/srv/proj')).toBe('.prime/harness/notes/x.md');
    expect(relativeToRoot('/srv/proj/.prime/harness/notes/x.md', '/srv/proj/')).toBe('.prime/harness/notes/x.md');
    expect(relativeToRoot('/home/me/.prime/harness/notes/x.md', '/srv/proj')).toBeNull();
    expect(relativeToRoot('/srv/project2/x.md', '/srv/proj')).toBeNull();
    expect(relativeToRoot('/srv/proj/../etc/passwd', '/srv/proj')).toBeNull();
    expect(relativeToRoot('/x/y.md', '/')).toBe('x/y.md');
    expect(relativeToRoot('/x/y.md', '')).toBeNull();
    expect(relativeToRoot('/x/y.md', '~/proj')).toBeNull();
  });
});

describe('diffs', () => {
  const diff = '--- v1/notes/x.md\n+++ v2/notes/x.md\n@@ -1,2 +1,2 @@\n title\n-old line\n+new line\n+another\n';
  it('classifies unified diff lines', () => {
    expect(parseDiff(diff).map(l => l.type)).toEqual(['file', 'file', 'hunk', 'context', 'del', 'add', 'add']);
    expect(parseDiff('')).toEqual([]);
    expect(diffStat(diff)).toEqual({ added: 2, removed: 1 });
  });
  it('diffs a version against the one before it; the first has none', () => {
    const versions = [V(1, 'create'), V(2), V(4), V(3)];
    expect(diffPair(versions, 1)).toBeNull();
    expect(diffPair(versions, 2)).toEqual([1, 2]);
    expect(diffPair(versions, 4)).toEqual([3, 4]);
    expect(diffPair(versions, 9)).toBeNull();
  });
  it('offers rollback to earlier versions that hold content', () => {
    const versions = [V(1, 'create'), V(2, 'delete'), V(3, 'rollback')];
    expect(canRollbackTo(versions, versions[0])).toBe(true);
    expect(canRollbackTo(versions, versions[1])).toBe(false);
    expect(canRollbackTo(versions, versions[2])).toBe(false);
  });
});

describe('refinements', () => {
  const R = (id: string, created: number, statuses: string[], extra: Partial<IRefinement> = {}): IRefinement => ({
    id,
    created,
    status: 'proposed',
    edits: statuses.map((status, index) => ({ index, op: 'create', kind: 'note', id: `n${index}`, status })),
    ...extra
  });
  it('lists pending edits and whether the refinement can be rolled back', () => {
    const r = R('r1', 1, ['applied', 'pending', 'rejected', 'pending']);
    expect(pendingEdits(r)).toEqual([1, 3]);
    expect(canRollbackRefinement(r)).toBe(true);
    expect(canRollbackRefinement(R('r2', 1, ['pending']))).toBe(false);
    expect(canRollbackRefinement(R('r3', 1, ['applied'], { rolled_back: { by: 'user', ts: 2, entries: [] } }))).toBe(false);
    expect(editLabel(r.edits[0])).toBe('create note n0');
  });
  it('puts refinements waiting for review first, then newest first', () => {
    const list = [R('old', 1, ['applied']), R('new', 3, ['rejected']), R('waiting', 2, ['pending'])];
    expect(sortRefinements(list).map(r => r.id)).toEqual(['waiting', 'new', 'old']);
  });
});

describe('editing an entry through the REST API', () => {
  const loaded = E('note', 'style', {
    scope: 'global',
    version: 4,
    title: 'Style',
    content: 'Short sentences.',
    metadata: { tags: ['prose'] }
  });

  it('starts from the loaded entry, metadata as JSON text', () => {
    expect(entryDraft(loaded)).toEqual({
      title: 'Style',
      content: 'Short sentences.',
      metadata: '{\n  "tags": [\n    "prose"\n  ]\n}'
    });
    expect(entryDraft(E('note', 'bare'))).toEqual({ title: '', content: '', metadata: '{}' });
  });

  it('sends only the changed fields, the loaded version as base_version and the scope', () => {
    const draft = { ...entryDraft(loaded), content: 'Short sentences. Name files.' };
    expect(entryUpdate(loaded, draft)).toEqual({
      content: 'Short sentences. Name files.',
      base_version: 4,
      scope: 'global',
      reason: 'edited in the Harness view'
    });
    const meta = { ...entryDraft(loaded), title: 'House style', metadata: '{"tags": ["prose", "files"]}' };
    expect(entryUpdate(loaded, meta)).toMatchObject({
      title: 'House style',
      metadata: { tags: ['prose', 'files'] },
      base_version: 4
    });
  });

  it('sends nothing when nothing changed (reformatted metadata is no change)', () => {
    expect(entryUpdate(loaded, entryDraft(loaded))).toBeNull();
    expect(entryUpdate(loaded, { ...entryDraft(loaded), metadata: '{"tags":["prose"]}' })).toBeNull();
  });

  it('refuses metadata that is not a JSON object, saying why', () => {
    expect(() => parseMetadata('{"a": ')).toThrow(/not valid JSON/);
    expect(() => parseMetadata('[1, 2]')).toThrow(/must be a JSON object/);
    expect(() => parseMetadata('null')).toThrow(/must be a JSON object/);
    expect(parseMetadata('  ')).toEqual({});
    expect(() => entryUpdate(loaded, { ...entryDraft(loaded), metadata: '"x"' })).toThrow(/JSON object/);
  });

  it('explains a conflict: what changed, that nothing was saved, and how to reload', () => {
    const msg = conflictMessage(loaded, "note 'style' is at version 5, not 4");
    expect(msg).toMatch(/^Conflict: note style was changed by someone else since you opened version 4/);
    expect(msg).toContain('at version 5, not 4');
    expect(msg).toContain('Nothing was saved');
    expect(msg).toContain('Reload latest');
  });
});

describe('creating an entry', () => {
  const draft = { kind: 'memory' as const, scope: 'project' as const, title: 'CSV tips!', id: '', content: 'Use dtype=str.', metadata: '' };
  it('takes its id from the title when none is given', () => {
    expect(entryIdFor('Check CSV files!')).toBe('check-csv-files');
    expect(newEntryBody(draft)).toEqual({
      kind: 'memory',
      id: 'csv-tips',
      title: 'CSV tips!',
      content: 'Use dtype=str.',
      scope: 'project',
      reason: 'created in the Harness view'
    });
  });
  it('refuses an id the daemon would refuse, and metadata that is not an object', () => {
    expect(() => newEntryBody({ ...draft, id: 'Bad Id' })).toThrow(/id must be/);
    expect(() => newEntryBody({ ...draft, title: '', id: '' })).toThrow(/id must be/);
    expect(() => newEntryBody({ ...draft, metadata: '[1]' })).toThrow(/JSON object/);
    expect(newEntryBody({ ...draft, id: 'x.y_z-1', metadata: '{"tags": ["csv"]}' }).metadata).toEqual({ tags: ['csv'] });
  });
  it('lists every kind of the protocol, with its plural heading', () => {
    expect(KINDS).toEqual(['note', 'memory', 'skill', 'subagent', 'example']);
    expect(groupEntries([]).map(g => g.label)).toEqual(['Prompt notes', 'Memories', 'Skills', 'Sub-agents', 'Worked examples']);
  });
});
