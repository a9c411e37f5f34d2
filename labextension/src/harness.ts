/**
 * The Harness view: browse the Continual Harness (prompt notes, memories, skills, sub-agent
 * specs; project and global), open an entry's file in the editor (or edit it through the REST
 * API when the editor cannot reach it: harnessEditor.ts), its history with diffs,
 * roll back, run a refinement and review the proposed edits one by one.
 * REST: docs/architecture.md, "Continual Harness"; pure logic in harnessModel.ts.
 */
import { Dialog, InputDialog, showDialog } from '@jupyterlab/apputils';
import { Widget } from '@lumino/widgets';

import { PrimeAPI } from './api';
import { h } from './dom';
import { editHarnessEntry } from './harnessEditor';
import {
  canRollbackRefinement,
  canRollbackTo,
  diffPair,
  diffStat,
  editLabel,
  entryFile,
  groupEntries,
  IHarnessEntry,
  IHarnessListing,
  IHarnessVersion,
  IRefinement,
  parseDiff,
  pendingEdits,
  relativeToRoot,
  sortRefinements
} from './harnessModel';
import { toMillis } from './model';

export interface IHarnessViewOptions {
  api: PrimeAPI;
  /** Absolute path of the server root (PageConfig `serverRoot`). */
  serverRoot: string;
  /** Open a file (relative to the server root) in the editor. */
  openFile: (path: string) => Promise<void>;
}

function when(ts: unknown): string {
  const ms = toMillis(ts as number | string | null | undefined);
  return ms === null ? '' : new Date(ms).toLocaleString();
}

function button(label: string, action: string, attrs: Record<string, string | number> = {}, accept = false) {
  return h(
    'button',
    {
      type: 'button',
      className: `jp-mod-styled ${accept ? 'jp-mod-accept' : 'jp-mod-reject'} jp-PrimeHarness-button`,
      'data-action': action,
      ...attrs
    },
    label
  );
}

function diffNode(diff: string): HTMLElement {
  const pre = h('pre', { className: 'jp-PrimeHarness-diff' });
  const lines = parseDiff(diff);
  if (!lines.length) {
    pre.append(h('span', { className: 'jp-PrimeHarness-diff-context' }, '(no difference)'));
  }
  for (const l of lines) {
    pre.append(h('span', { className: `jp-PrimeHarness-diff-${l.type}` }, l.text + '\n'));
  }
  return pre;
}

export class HarnessView extends Widget {
  constructor(private readonly options: IHarnessViewOptions) {
    super();
    this.id = 'prime-kernel-harness';
    this.title.label = 'Agent Harness';
    this.title.closable = true;
    this.addClass('jp-PrimeHarness');

    this._search = h('input', {
      className: 'jp-mod-styled jp-PrimeHarness-search',
      type: 'search',
      placeholder: 'Filter entries…',
      'aria-label': 'Filter harness entries'
    });
    this._search.addEventListener('input', () => this._renderList());
    this._policy = h('span', { className: 'jp-PrimeHarness-policy' });
    this._status = h('div', { className: 'jp-PrimeHarness-status', role: 'status' });
    this._errors = h('div', { className: 'jp-PrimeHarness-errors' });
    this._list = h('div', { className: 'jp-PrimeHarness-list', role: 'list' });
    this._detail = h('div', { className: 'jp-PrimeHarness-detail' });
    this._refinements = h('div', { className: 'jp-PrimeHarness-refinements' });
    this.node.append(
      h(
        'div',
        { className: 'jp-PrimeHarness-toolbar' },
        this._search,
        this._policy,
        button('Refresh', 'refresh'),
        button('Refine…', 'refine', {}, true)
      ),
      this._status,
      this._errors,
      h('div', { className: 'jp-PrimeHarness-body' }, this._list, this._detail),
      h('h3', { className: 'jp-PrimeHarness-heading' }, 'Refinements'),
      this._refinements
    );
    this.node.addEventListener('click', ev => void this._onClick(ev));
    this._detail.append(h('div', { className: 'jp-PrimeHarness-hint' }, 'Select an entry to see it and its history.'));
    void this.refresh();
  }

  /** The listing shown (after the last refresh). */
  get listing(): IHarnessListing | null {
    return this._listing;
  }

  /** Reload entries and refinements (and the selected entry). */
  async refresh(): Promise<void> {
    try {
      const [listing, refinements] = await Promise.all([
        this.options.api.harness(),
        this.options.api.refinements()
      ]);
      this._listing = listing;
      this._refinementList = refinements;
      this._policy.textContent = `review policy: ${listing.policy}`;
      this._renderErrors();
      this._renderList();
      this._renderRefinements();
      if (this._selected) {
        const { kind, id } = this._selected;
        if (listing.entries.some(e => e.kind === kind && e.id === id)) {
          await this.select(kind, id);
        } else {
          this._selected = null;
          this._detail.replaceChildren(h('div', { className: 'jp-PrimeHarness-hint' }, `${kind} ${id} no longer exists.`));
        }
      }
    } catch (err) {
      this._setStatus(`Could not load the harness: ${(err as Error).message}`, true);
    }
  }

  /** Show an entry, its history, and what it can do. */
  async select(kind: string, id: string): Promise<void> {
    this._selected = { kind, id };
    this._renderList();
    const { api } = this.options;
    let entry: IHarnessEntry;
    let versions: IHarnessVersion[];
    try {
      [entry, versions] = await Promise.all([api.harnessEntry(kind, id), api.harnessHistory(kind, id)]);
    } catch (err) {
      this._detail.replaceChildren(
        h('div', { className: 'jp-PrimeHarness-error' }, `Could not load ${kind} ${id}: ${(err as Error).message}`)
      );
      return;
    }
    this._entry = entry;
    this._versions = versions;
    const inRoot = this._editorPath(entry) !== null;
    const meta = Object.entries(entry.metadata || {}).map(([k, v]) =>
      h('li', {}, h('strong', {}, `${k}: `), typeof v === 'string' ? v : JSON.stringify(v))
    );
    const files = Object.keys(entry.files || {});
    const parts: (Node | null)[] = [
      h(
        'div',
        { className: 'jp-PrimeHarness-entryHead' },
        h('span', { className: 'jp-PrimeHarness-entryTitle' }, entry.title || entry.id),
        h('span', { className: `jp-PrimeHarness-scope jp-mod-${entry.scope}` }, entry.scope),
        h('span', { className: 'jp-PrimeHarness-version' }, `v${entry.version ?? '?'}`)
      ),
      h('div', { className: 'jp-PrimeHarness-entryMeta' }, `${entry.kind} · ${entry.id} · ${entry.path}`),
      h(
        'div',
        { className: 'jp-PrimeHarness-actions' },
        button(inRoot ? 'Open in editor' : 'Edit', 'open', {}, true)
      ),
      meta.length ? h('ul', { className: 'jp-PrimeHarness-metadata' }, ...meta) : null,
      h('pre', { className: 'jp-PrimeHarness-content' }, entry.content ?? ''),
      files.length ? h('div', { className: 'jp-PrimeHarness-files' }, `Files: ${files.join(', ')}`) : null,
      h('h4', {}, 'History'),
      this._historyTable(versions),
      h('div', { className: 'jp-PrimeHarness-diffPane' })
    ];
    this._detail.replaceChildren(...parts.filter((p): p is Node => p !== null));
  }

  /** Run a refinement (optionally from a session's trajectory) and show its proposal. */
  async refine(options: { session_id?: string; instructions?: string } = {}): Promise<IRefinement | null> {
    this._setStatus('Refining the harness (one model call)…');
    try {
      const r = await this.options.api.refine(options);
      this._setStatus(`Refinement ${r.id}: ${r.status}${r.error ? ` (${r.error})` : ''}`, r.status === 'invalid' || r.status === 'failed');
      await this.refresh();
      this._refinements.querySelector(`[data-refinement="${r.id}"]`)?.scrollIntoView({ block: 'nearest' });
      return r;
    } catch (err) {
      this._setStatus(`Refinement failed: ${(err as Error).message}`, true);
      return null;
    }
  }

  private _editorPath(entry: IHarnessEntry): string | null {
    const file = this._listing ? entryFile(entry, this._listing.roots) : entry.file || null;
    return file ? relativeToRoot(file, this.options.serverRoot) : null;
  }

  private _historyTable(versions: IHarnessVersion[]): HTMLElement {
    const rows = versions
      .slice()
      .sort((a, b) => b.version - a.version)
      .map(v =>
        h(
          'tr',
          { 'data-version': v.version },
          h('td', {}, `v${v.version}`),
          h('td', {}, v.op),
          h('td', {}, v.author),
          h('td', { className: 'jp-PrimeHarness-reason' }, v.reason || ''),
          h('td', {}, when(v.ts)),
          h(
            'td',
            { className: 'jp-PrimeHarness-rowActions' },
            diffPair(versions, v.version) ? button('Diff', 'diff', { 'data-version': v.version }) : button('Show', 'show-version', { 'data-version': v.version }),
            canRollbackTo(versions, v) ? button('Roll back here', 'rollback', { 'data-version': v.version }) : null
          )
        )
      );
    return h(
      'table',
      { className: 'jp-PrimeHarness-history' },
      h('thead', {}, h('tr', {}, ...['version', 'op', 'by', 'why', 'when', ''].map(t => h('th', {}, t)))),
      h('tbody', {}, ...rows)
    );
  }

  private async _onClick(ev: MouseEvent): Promise<void> {
    const target = ev.target as HTMLElement;
    const entryRow = target.closest('[data-entry-id]') as HTMLElement | null;
    if (entryRow) {
      await this.select(entryRow.dataset.entryKind!, entryRow.dataset.entryId!);
      return;
    }
    const el = target.closest('[data-action]') as HTMLElement | null;
    if (!el) {
      return;
    }
    const action = el.dataset.action!;
    const version = Number(el.dataset.version);
    const rid = (el.closest('[data-refinement]') as HTMLElement | null)?.dataset.refinement;
    const edit = el.dataset.edit !== undefined ? Number(el.dataset.edit) : undefined;
    try {
      switch (action) {
        case 'refresh':
          await this.refresh();
          break;
        case 'refine': {
          const res = await InputDialog.getText({
            title: 'Refine the harness',
            label: 'Instructions for this refinement (optional); recent sessions are the evidence.',
            placeholder: 'e.g. learn from the failed CSV tasks'
          });
          if (res.button.accept) {
            await this.refine(res.value && res.value.trim() ? { instructions: res.value.trim() } : {});
          }
          break;
        }
        case 'open':
          await this._open();
          break;
        case 'diff':
          await this._showDiff(version);
          break;
        case 'show-version':
          await this._showVersion(version);
          break;
        case 'rollback':
          await this._rollback(version);
          break;
        case 'approve':
        case 'reject':
        case 'rollback-refinement':
          if (rid) {
            await this._review(rid, action, edit);
          }
          break;
      }
    } catch (err) {
      this._setStatus((err as Error).message || String(err), true);
    }
  }

  private async _open(): Promise<void> {
    const entry = this._entry;
    if (!entry) {
      return;
    }
    const path = this._editorPath(entry);
    let note = 'This entry is outside the server root: it is edited here, and each save is a new version.';
    if (path !== null) {
      try {
        await this.options.openFile(path);
        return;
      } catch (err) {
        note =
          `JupyterLab cannot open ${path} (${(err as Error).message}; hidden folders need ` +
          '`c.ContentsManager.allow_hidden = True`): it is edited here, and each save is a new version.';
      }
    }
    const saved = await editHarnessEntry(this.options.api, entry, note);
    if (saved) {
      this._setStatus(`${saved.kind} ${saved.id}: saved as v${saved.version ?? '?'}.`);
      await this.refresh();
    }
  }

  private _diffPane(): HTMLElement | null {
    return this._detail.querySelector('.jp-PrimeHarness-diffPane');
  }

  private async _showDiff(version: number): Promise<void> {
    const sel = this._selected;
    const pair = diffPair(this._versions, version);
    const pane = this._diffPane();
    if (!sel || !pair || !pane) {
      return;
    }
    const diff = await this.options.api.harnessDiff(sel.kind, sel.id, pair[0], pair[1]);
    const stat = diffStat(diff);
    pane.replaceChildren(
      h('h4', {}, `v${pair[0]} → v${pair[1]} (+${stat.added} −${stat.removed})`),
      diffNode(diff)
    );
  }

  private async _showVersion(version: number): Promise<void> {
    const sel = this._selected;
    const pane = this._diffPane();
    if (!sel || !pane) {
      return;
    }
    const v = await this.options.api.harnessVersion(sel.kind, sel.id, version);
    const files = Object.entries(v.after || {});
    pane.replaceChildren(
      h('h4', {}, `v${version} (${v.op} by ${v.author})`),
      ...files.map(([name, text]) => h('div', {}, h('strong', {}, name), h('pre', { className: 'jp-PrimeHarness-content' }, text)))
    );
  }

  private async _rollback(version: number): Promise<void> {
    const sel = this._selected;
    if (!sel) {
      return;
    }
    const ok = await showDialog({
      title: 'Roll back?',
      body: `Make ${sel.kind} ${sel.id} exactly what it was at version ${version}? This is recorded as a new version.`,
      buttons: [Dialog.cancelButton(), Dialog.warnButton({ label: 'Roll back' })]
    });
    if (!ok.button.accept) {
      return;
    }
    const v = await this.options.api.harnessRollback(sel.kind, sel.id, version);
    this._setStatus(`${sel.kind} ${sel.id}: rolled back to v${version} (now v${v.version}).`);
    await this.refresh();
  }

  private async _review(rid: string, action: string, edit?: number): Promise<void> {
    const api = this.options.api;
    let r: IRefinement;
    if (action === 'rollback-refinement') {
      r = await api.reviewRefinement(rid, 'rollback');
    } else {
      r = await api.reviewRefinement(rid, action as 'approve' | 'reject', edit === undefined ? undefined : [edit]);
    }
    const failed = (r.edits || []).filter(e => e.status === 'failed' || e.status === 'refused');
    this._setStatus(
      `Refinement ${rid}: ${r.status}` + (failed.length ? ` — ${failed.map(e => `${editLabel(e)}: ${e.note || e.status}`).join('; ')}` : ''),
      failed.length > 0
    );
    await this.refresh();
  }

  private _setStatus(text: string, error = false): void {
    this._status.textContent = text;
    this._status.classList.toggle('jp-mod-error', error);
    this._status.style.display = text ? '' : 'none';
  }

  private _renderErrors(): void {
    const errors = this._listing?.errors || [];
    this._errors.replaceChildren(
      ...errors.map(e =>
        h(
          'div',
          { className: 'jp-PrimeHarness-error' },
          `${e.kind ?? ''} ${e.id ?? ''} (${e.scope ?? ''}): ${e.message}` + (e.path ? ` — ${e.path}${e.line ? `:${e.line}` : ''}` : '')
        )
      )
    );
  }

  private _renderList(): void {
    const entries = this._listing?.entries || [];
    const groups = groupEntries(entries, this._search.value);
    this._list.replaceChildren(
      ...groups.map(g =>
        h(
          'div',
          { className: 'jp-PrimeHarness-group', 'data-kind': g.kind },
          h('div', { className: 'jp-PrimeHarness-groupLabel' }, `${g.label} (${g.entries.length})`),
          ...g.entries.map(e =>
            h(
              'div',
              {
                className:
                  'jp-PrimeHarness-entry' +
                  (this._selected && this._selected.kind === e.kind && this._selected.id === e.id ? ' jp-mod-selected' : ''),
                role: 'listitem',
                tabindex: 0,
                'data-entry-kind': e.kind,
                'data-entry-id': e.id,
                title: e.summary || e.title || e.id
              },
              h('span', { className: 'jp-PrimeHarness-entryId' }, e.id),
              h('span', { className: 'jp-PrimeHarness-entrySummary' }, e.title && e.title !== e.id ? e.title : e.summary || ''),
              h('span', { className: `jp-PrimeHarness-scope jp-mod-${e.scope}` }, e.scope),
              h('span', { className: 'jp-PrimeHarness-version' }, `v${e.version ?? '?'}`)
            )
          )
        )
      )
    );
  }

  private _renderRefinements(): void {
    const list = sortRefinements(this._refinementList);
    if (!list.length) {
      this._refinements.replaceChildren(
        h('div', { className: 'jp-PrimeHarness-hint' }, 'No refinements yet. “Refine…” asks the model to improve the harness from recent sessions.')
      );
      return;
    }
    this._refinements.replaceChildren(
      ...list.map(r => {
        const pending = pendingEdits(r);
        return h(
          'div',
          { className: 'jp-PrimeHarness-refinement', 'data-refinement': r.id, 'data-status': r.status },
          h(
            'div',
            { className: 'jp-PrimeHarness-refinementHead' },
            h('span', { className: `jp-PrimeHarness-refStatus jp-mod-${r.status}` }, r.status),
            h('strong', {}, r.summary || r.error || r.id),
            h('span', { className: 'jp-PrimeHarness-entryMeta' }, `${r.id} · ${r.trigger || r.author || ''} · ${when(r.created)}`)
          ),
          r.rationale ? h('div', { className: 'jp-PrimeHarness-rationale' }, `Why: ${r.rationale}`) : null,
          r.expected_outcome ? h('div', { className: 'jp-PrimeHarness-rationale' }, `Expected: ${r.expected_outcome}`) : null,
          r.error && r.summary ? h('div', { className: 'jp-PrimeHarness-error' }, r.error) : null,
          h(
            'div',
            { className: 'jp-PrimeHarness-refActions' },
            pending.length > 1 ? button(`Approve all ${pending.length}`, 'approve', {}, true) : null,
            pending.length > 1 ? button('Reject all', 'reject') : null,
            canRollbackRefinement(r) ? button('Roll back refinement', 'rollback-refinement') : null
          ),
          ...(r.edits || []).map(e =>
            h(
              'div',
              { className: 'jp-PrimeHarness-edit', 'data-edit-index': e.index, 'data-status': e.status },
              h(
                'div',
                { className: 'jp-PrimeHarness-editHead' },
                h('span', { className: `jp-PrimeHarness-refStatus jp-mod-${e.status}` }, e.status),
                h('span', { className: 'jp-PrimeHarness-editLabel' }, editLabel(e)),
                ...(e.flags || []).map(f => h('span', { className: 'jp-PrimeHarness-flag', title: 'needs a person even under auto' }, f)),
                e.status === 'pending' ? button('Approve', 'approve', { 'data-edit': e.index }, true) : null,
                e.status === 'pending' ? button('Reject', 'reject', { 'data-edit': e.index }) : null
              ),
              e.reason ? h('div', { className: 'jp-PrimeHarness-rationale' }, e.reason) : null,
              e.note ? h('div', { className: 'jp-PrimeHarness-entryMeta' }, e.note) : null,
              e.content ? h('details', {}, h('summary', {}, e.title ? `${e.title} — content` : 'content'), h('pre', { className: 'jp-PrimeHarness-content' }, e.content)) : null
            )
          )
        );
      })
    );
  }

  private _search: HTMLInputElement;
  private _policy: HTMLSpanElement;
  private _status: HTMLDivElement;
  private _errors: HTMLDivElement;
  private _list: HTMLDivElement;
  private _detail: HTMLDivElement;
  private _refinements: HTMLDivElement;
  private _listing: IHarnessListing | null = null;
  private _refinementList: IRefinement[] = [];
  private _selected: { kind: string; id: string } | null = null;
  private _entry: IHarnessEntry | null = null;
  private _versions: IHarnessVersion[] = [];
}
