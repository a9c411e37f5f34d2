/**
 * Pure logic of the Harness view: grouping of entries, where an entry's file is under the
 * server root, unified-diff parsing, what a refinement's review allows, and the bodies of a new
 * or edited entry. The JSON shapes of the harness REST API are declared in tokens.ts, as part
 * of the extension's public contract. No DOM and no JupyterLab imports (only types): unit
 * tested in node (labextension/test/harness.spec.ts).
 */
import { HARNESS_KINDS, HarnessKind } from './protocol';
import type {
  HarnessScope,
  IEntryUpdate,
  IHarnessEdit,
  IHarnessEntry,
  IHarnessListing,
  IHarnessVersion,
  INewEntry,
  INewEntryDraft,
  IRefinement
} from './tokens';

/** The kinds, in the order the view lists them. */
export const KINDS = Object.keys(HARNESS_KINDS) as HarnessKind[];

/** The URL segment of a kind ("note" -> "notes"); unknown kinds pass through. */
export function kindUrl(kind: string): string {
  return kind in HARNESS_KINDS ? HARNESS_KINDS[kind as HarnessKind].folder : kind;
}

export interface IEntryGroup {
  kind: HarnessKind;
  label: string;
  entries: IHarnessEntry[];
}

/** Whether an entry matches a case-insensitive text filter (id, title, summary). */
export function entryMatches(e: IHarnessEntry, text: string): boolean {
  const t = text.trim().toLowerCase();
  if (!t) {
    return true;
  }
  return [e.id, e.title, e.summary].filter(Boolean).join('\n').toLowerCase().includes(t);
}

/**
 * Entries grouped by kind (in KINDS order, empty groups kept so each kind has a heading),
 * each group sorted by id, project before global for the same id.
 */
export function groupEntries(entries: IHarnessEntry[], text = ''): IEntryGroup[] {
  return KINDS.map(kind => ({
    kind,
    label: HARNESS_KINDS[kind].plural,
    entries: entries
      .filter(e => e.kind === kind && entryMatches(e, text))
      .sort(
        (a, b) =>
          a.id.localeCompare(b.id) || (a.scope === 'project' ? 0 : 1) - (b.scope === 'project' ? 0 : 1)
      )
  }));
}

function trimSlash(p: string): string {
  return p.replace(/\\/g, '/').replace(/\/+$/, '');
}

/**
 * The path of an absolute file relative to the server root (what the contents API and the
 * editor take), or null if it is outside the root (a global entry, usually).
 */
export function relativeToRoot(file: string, serverRoot: string): string | null {
  const f = trimSlash(file);
  const root = trimSlash(serverRoot); // "" for "/"
  if (!serverRoot.trim() || !f.startsWith('/') || (root && !root.startsWith('/'))) {
    return null; // unknown root, or not absolute paths (e.g. "~/x"): cannot tell
  }
  if (!f.startsWith(root + '/')) {
    return null;
  }
  const rel = f.slice(root.length + 1);
  return rel.split('/').includes('..') ? null : rel;
}

/** The absolute file of an entry: its `file`, else its scope's root joined with its `path`. */
export function entryFile(e: IHarnessEntry, roots: IHarnessListing['roots']): string | null {
  if (e.file) {
    return e.file;
  }
  const root = roots[e.scope as HarnessScope];
  return root ? `${trimSlash(root)}/${e.path}` : null;
}

export type DiffLineType = 'file' | 'hunk' | 'add' | 'del' | 'context';

export interface IDiffLine {
  type: DiffLineType;
  text: string;
}

/** Classify the lines of a unified diff for display. */
export function parseDiff(diff: string): IDiffLine[] {
  if (!diff) {
    return [];
  }
  const lines = diff.replace(/\n$/, '').split('\n');
  return lines.map(text => {
    let type: DiffLineType = 'context';
    if (text.startsWith('+++') || text.startsWith('---')) {
      type = 'file';
    } else if (text.startsWith('@@')) {
      type = 'hunk';
    } else if (text.startsWith('+')) {
      type = 'add';
    } else if (text.startsWith('-')) {
      type = 'del';
    }
    return { type, text };
  });
}

/** Added and removed line counts of a unified diff. */
export function diffStat(diff: string): { added: number; removed: number } {
  let added = 0;
  let removed = 0;
  for (const l of parseDiff(diff)) {
    if (l.type === 'add') {
      added++;
    } else if (l.type === 'del') {
      removed++;
    }
  }
  return { added, removed };
}

/**
 * The versions a version's "Diff" compares: the one before it and itself, or null for the
 * first version (there is nothing before a create).
 */
export function diffPair(versions: IHarnessVersion[], version: number): [number, number] | null {
  const sorted = versions.map(v => v.version).sort((a, b) => a - b);
  const idx = sorted.indexOf(version);
  if (idx <= 0) {
    return null;
  }
  return [sorted[idx - 1], version];
}

/** Whether rolling back to this version would change anything (not the latest, not a delete). */
export function canRollbackTo(versions: IHarnessVersion[], v: IHarnessVersion): boolean {
  const latest = versions.reduce((m, x) => Math.max(m, x.version), 0);
  return v.version !== latest && v.op !== 'delete';
}

/** Indices of the edits of a refinement that still wait for a person. */
export function pendingEdits(r: IRefinement): number[] {
  return (r.edits || []).filter(e => e.status === 'pending').map(e => e.index);
}

/** Whether a whole refinement can be rolled back (some of its edits were applied). */
export function canRollbackRefinement(r: IRefinement): boolean {
  return !r.rolled_back && (r.edits || []).some(e => e.status === 'applied');
}

/** "create note style-guide", the one-line name of an edit. */
export function editLabel(e: IHarnessEdit): string {
  return `${e.op} ${e.kind} ${e.id}`;
}

/** Refinements with pending edits first, then newest first. */
export function sortRefinements(list: IRefinement[]): IRefinement[] {
  const ts = (r: IRefinement) => {
    const t = r.created;
    if (typeof t === 'number') {
      return t;
    }
    const n = Date.parse(String(t ?? ''));
    return isNaN(n) ? 0 : n / 1000;
  };
  return list
    .slice()
    .sort(
      (a, b) =>
        Number(pendingEdits(b).length > 0) - Number(pendingEdits(a).length > 0) || ts(b) - ts(a)
    );
}

// ---------------------------------------------------------------------------
// Editing an entry through the REST API (when the editor cannot reach its file)
// ---------------------------------------------------------------------------

/** What the entry editor shows and the person changes; metadata as JSON text. */
export interface IEntryDraft {
  title: string;
  content: string;
  metadata: string;
}

/** The editor's starting point: the entry as loaded. */
export function entryDraft(e: IHarnessEntry): IEntryDraft {
  return {
    title: e.title ?? '',
    content: e.content ?? '',
    metadata: JSON.stringify(e.metadata ?? {}, null, 2)
  };
}

/** Metadata typed as JSON text: an object, or an Error saying what is wrong. */
export function parseMetadata(text: string): Record<string, unknown> {
  if (!text.trim()) {
    return {};
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new Error(`Metadata is not valid JSON: ${(err as Error).message}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new Error('Metadata must be a JSON object, e.g. {"tags": ["csv"]}');
  }
  return value as Record<string, unknown>;
}

/**
 * The update to send for a draft of `base`: only the changed fields, with the loaded version
 * as `base_version` (the server answers 409 if someone changed the entry since) and the
 * entry's scope (so a global entry is edited where it lives). Null when nothing changed;
 * throws when the metadata is not a JSON object.
 */
export function entryUpdate(base: IHarnessEntry, draft: IEntryDraft): IEntryUpdate | null {
  const start = entryDraft(base);
  const body: IEntryUpdate = { scope: base.scope, reason: 'edited in the Harness view' };
  let changed = false;
  if (draft.title !== start.title) {
    body.title = draft.title;
    changed = true;
  }
  if (draft.content !== start.content) {
    body.content = draft.content;
    changed = true;
  }
  if (draft.metadata !== start.metadata) {
    const metadata = parseMetadata(draft.metadata);
    if (JSON.stringify(metadata) !== JSON.stringify(base.metadata ?? {})) {
      body.metadata = metadata;
      changed = true;
    }
  }
  if (!changed) {
    return null;
  }
  if (typeof base.version === 'number') {
    body.base_version = base.version;
  }
  return body;
}

/** What the editor says when a save was refused because the entry changed meanwhile (409). */
export function conflictMessage(base: IHarnessEntry, serverMessage: string): string {
  return (
    `Conflict: ${base.kind} ${base.id} was changed by someone else since you opened ` +
    `version ${base.version ?? '?'} (${serverMessage}). Nothing was saved and your edits are ` +
    'still here. “Reload latest” loads the current version and keeps your edits beside it to copy from.'
  );
}

// ---------------------------------------------------------------------------
// Creating an entry
// ---------------------------------------------------------------------------

/** Entry ids as the daemon accepts them (prime_kernel/harness/entries.py). */
export const ENTRY_ID = /^[a-z0-9][a-z0-9._-]{0,63}$/;

/** An id for a title: "Check CSV files!" -> "check-csv-files". */
export function entryIdFor(title: string): string {
  return title
    .toLowerCase()
    .replace(/[^a-z0-9._]+/g, '-')
    .replace(/^[^a-z0-9]+|-+$/g, '')
    .slice(0, 64)
    .replace(/-+$/, '');
}

/**
 * The body to create a draft (its id from the title when left empty); throws an Error saying
 * what is wrong with the id or the metadata.
 */
export function newEntryBody(draft: INewEntryDraft): INewEntry {
  const id = draft.id.trim() || entryIdFor(draft.title);
  if (!ENTRY_ID.test(id)) {
    throw new Error(
      `The id must be lower-case letters, digits, ".", "_" or "-" (at most 64, starting with a letter or digit), not "${id}"`
    );
  }
  const body: INewEntry = {
    kind: draft.kind,
    id,
    scope: draft.scope,
    reason: 'created in the Harness view'
  };
  if (draft.title.trim()) {
    body.title = draft.title.trim();
  }
  if (draft.content.trim()) {
    body.content = draft.content;
  }
  const metadata = parseMetadata(draft.metadata);
  if (Object.keys(metadata).length) {
    body.metadata = metadata;
  }
  return body;
}
