/**
 * The Harness view: browse the Continual Harness (prompt notes, memories, skills, sub-agents;
 * project and global), create an entry, open one's file in the editor (or edit it
 * through the REST API when the editor cannot reach it: harnessEditor.ts), its history with
 * diffs, roll back, run a refinement and review the proposed edits one by one. It renders what
 * its `HarnessModel` holds.
 */
import { Dialog, InputDialog, showDialog } from '@jupyterlab/apputils';
import type { TranslationBundle } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';

import { h } from './dom';
import { toMillis } from './format';
import {
  canRollbackRefinement,
  canRollbackTo,
  diffPair,
  diffStat,
  editLabel,
  entryFile,
  groupEntries,
  parseDiff,
  pendingEdits,
  relativeToRoot,
  sortRefinements
} from './harnessData';
import { createHarnessEntry, editHarnessEntry } from './harnessEditor';
import { HarnessModel } from './harnessModel';
import { HARNESS_KINDS, HarnessKind } from './protocol';
import type { IHarnessEntry, IHarnessVersion, IRefineRequest } from './tokens';
import { refineProgressText } from './verify';

export interface IHarnessViewOptions {
  model: HarnessModel;
  trans: TranslationBundle;
  /** Absolute path of the server root (PageConfig `serverRoot`). */
  serverRoot: string;
  /** Open a file (relative to the server root) in the editor. */
  openFile: (path: string) => Promise<void>;
}

function when(ts: number | string | null | undefined): string {
  const ms = toMillis(ts);
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

function diffNode(diff: string, trans: TranslationBundle): HTMLElement {
  const pre = h('pre', { className: 'jp-PrimeHarness-diff' });
  const lines = parseDiff(diff);
  if (!lines.length) {
    pre.append(h('span', { className: 'jp-PrimeHarness-diff-context' }, trans.__('(no difference)')));
  }
  for (const l of lines) {
    pre.append(h('span', { className: `jp-PrimeHarness-diff-${l.type}` }, l.text + '\n'));
  }
  return pre;
}

export class HarnessView extends Widget {
  constructor(private readonly options: IHarnessViewOptions) {
    super();
    const { model, trans } = options;
    this.model = model;
    this._trans = trans;
    this.id = 'prime-kernel-harness';
    this.title.label = trans.__('Agent Harness');
    this.title.closable = true;
    this.addClass('jp-PrimeHarness');

    this._search = h('input', {
      className: 'jp-mod-styled jp-PrimeHarness-search',
      type: 'search',
      placeholder: trans.__('Filter entries…'),
      'aria-label': trans.__('Filter harness entries')
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
        h('a', { className: 'jp-PrimeHarness-about', href: '#', 'data-action': 'about' }, trans.__('What is this?')),
        button(trans.__('New entry…'), 'new', {}, true),
        button(trans.__('Refresh'), 'refresh'),
        button(trans.__('Refine…'), 'refine', {}, true)
      ),
      this._status,
      this._errors,
      h('div', { className: 'jp-PrimeHarness-body' }, this._list, this._detail),
      h('h3', { className: 'jp-PrimeHarness-heading' }, trans.__('Refinements')),
      this._refinements
    );
    this.node.addEventListener('click', ev => void this._onClick(ev));
    model.changed.connect(this._render, this);
    this._render();
    void this.refresh();
  }

  readonly model: HarnessModel;

  /** Reload entries, refinements and the selected entry. */
  async refresh(): Promise<void> {
    await this._run(() => this.model.refresh(), this._trans.__('Could not load the harness: %1'));
  }

  /** Run a refinement (optionally from a session's trajectory) and show its proposal. */
  async refine(options: IRefineRequest = {}): Promise<void> {
    const trans = this._trans;
    const since = Date.now();
    this._setStatus(refineProgressText(undefined, 0, trans));
    // While the model reads and writes (streamed), show how far it got, once a second.
    const poll = setInterval(() => {
      void this.model.api.refineProgress().then(
        running => this._setStatus(refineProgressText(running[0], (Date.now() - since) / 1000, trans)),
        () => undefined
      );
    }, 1000);
    await this._run(async () => {
      const r = await this.model.refine(options).finally(() => clearInterval(poll));
      this._setStatus(
        r.error ? trans.__('Refinement %1: %2 (%3)', r.id, r.status, r.error) : trans.__('Refinement %1: %2', r.id, r.status),
        r.status === 'invalid' || r.status === 'failed'
      );
      this.showRefinement(r.id);
    }, trans.__('Refinement failed: %1'));
  }

  /** Scroll a refinement into view and mark it. */
  showRefinement(rid: string): void {
    for (const el of this._refinements.querySelectorAll('.jp-mod-highlighted')) {
      el.classList.remove('jp-mod-highlighted');
    }
    const node = this._refinements.querySelector(`[data-refinement="${CSS.escape(rid)}"]`);
    if (node) {
      node.classList.add('jp-mod-highlighted');
      node.scrollIntoView({ block: 'nearest' });
    }
  }

  /** Ask for a new entry (of `kind` by default) and create it. */
  async create(kind: HarnessKind = 'note'): Promise<void> {
    const entry = await createHarnessEntry(this.model, kind, this._trans);
    if (entry) {
      this._setStatus(this._trans.__('%1 %2 created (%3, v%4).', entry.kind, entry.id, entry.scope, entry.version ?? '?'));
    }
  }

  dispose(): void {
    if (!this.isDisposed) {
      this.model.changed.disconnect(this._render, this);
    }
    super.dispose();
  }

  /** Run a model action; its error goes to the status line (`failure` with %1 for the message). */
  private async _run(action: () => Promise<void>, failure: string): Promise<void> {
    try {
      await action();
    } catch (err) {
      this._setStatus(failure.replace('%1', (err as Error).message || String(err)), true);
    }
  }

  private _render(): void {
    const listing = this.model.listing;
    this._policy.textContent = listing ? policyText(listing.policy, this._trans) : '';
    this._renderErrors();
    this._renderList();
    this._renderDetail();
    this._renderRefinements();
  }

  private _editorPath(entry: IHarnessEntry): string | null {
    const listing = this.model.listing;
    const file = listing ? entryFile(entry, listing.roots) : entry.file || null;
    return file ? relativeToRoot(file, this.options.serverRoot) : null;
  }

  private _renderDetail(): void {
    const trans = this._trans;
    const sel = this.model.selected;
    const entry = this.model.entry;
    if (!sel) {
      this._detail.replaceChildren(h('div', { className: 'jp-PrimeHarness-hint' }, trans.__('Select an entry to see it and its history.')));
      return;
    }
    if (!entry || entry.kind !== sel.kind || entry.id !== sel.id) {
      return; // loading: keep what is shown
    }
    const pane = this._detail.querySelector('.jp-PrimeHarness-diffPane');
    const samePane = pane && this._detail.dataset.entry === `${entry.kind}/${entry.id}/${entry.version}`;
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
      h('div', { className: 'jp-PrimeHarness-actions' }, button(inRoot ? trans.__('Open in editor') : trans.__('Edit'), 'open', {}, true)),
      meta.length ? h('ul', { className: 'jp-PrimeHarness-metadata' }, ...meta) : null,
      h('pre', { className: 'jp-PrimeHarness-content' }, entry.content ?? ''),
      files.length ? h('div', { className: 'jp-PrimeHarness-files' }, trans.__('Files: %1', files.join(', '))) : null,
      h('h4', {}, trans.__('History')),
      this._historyTable(this.model.versions),
      // A diff being read survives a re-render of the same version.
      samePane ? pane : h('div', { className: 'jp-PrimeHarness-diffPane' })
    ];
    this._detail.dataset.entry = `${entry.kind}/${entry.id}/${entry.version}`;
    this._detail.replaceChildren(...parts.filter((p): p is Node => p !== null));
  }

  private _historyTable(versions: readonly IHarnessVersion[]): HTMLElement {
    const trans = this._trans;
    const all = [...versions];
    const rows = all
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
            diffPair(all, v.version)
              ? button(trans.__('Diff'), 'diff', { 'data-version': v.version })
              : button(trans.__('Show'), 'show-version', { 'data-version': v.version }),
            canRollbackTo(all, v) ? button(trans.__('Roll back here'), 'rollback', { 'data-version': v.version }) : null
          )
        )
      );
    const heads = [trans.__('version'), trans.__('op'), trans.__('by'), trans.__('why'), trans.__('when'), ''];
    return h(
      'table',
      { className: 'jp-PrimeHarness-history' },
      h('thead', {}, h('tr', {}, ...heads.map(t => h('th', {}, t)))),
      h('tbody', {}, ...rows)
    );
  }

  private async _onClick(ev: MouseEvent): Promise<void> {
    const target = ev.target as HTMLElement;
    const el = target.closest('[data-action]') as HTMLElement | null;
    const entryRow = target.closest('[data-entry-id]') as HTMLElement | null;
    if (!el && entryRow) {
      const { entryKind, entryId } = entryRow.dataset;
      await this._run(() => this.model.select(entryKind!, entryId!), this._trans.__('Could not load the entry: %1'));
      return;
    }
    if (!el) {
      return;
    }
    const trans = this._trans;
    const action = el.dataset.action!;
    const version = Number(el.dataset.version);
    const rid = (el.closest('[data-refinement]') as HTMLElement | null)?.dataset.refinement;
    const edit = el.dataset.edit !== undefined ? Number(el.dataset.edit) : undefined;
    await this._run(async () => {
      switch (action) {
        case 'new':
          await this.create((el.dataset.kind as HarnessKind | undefined) ?? 'note');
          break;
        case 'refresh':
          await this.model.refresh();
          break;
        case 'about':
          ev.preventDefault();
          await showDialog({
            title: trans.__('The harness'),
            body: aboutHarness(trans),
            buttons: [Dialog.okButton({ label: trans.__('Close') })]
          });
          break;
        case 'refine': {
          const res = await InputDialog.getText({
            title: trans.__('Refine the harness'),
            label: trans.__('Instructions for this refinement (optional); recent sessions are the evidence.'),
            placeholder: trans.__('e.g. learn from the failed CSV tasks')
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
            await this._review(rid, action === 'rollback-refinement' ? 'rollback' : action, edit);
          }
          break;
      }
    }, '%1');
  }

  private async _open(): Promise<void> {
    const trans = this._trans;
    const entry = this.model.entry;
    if (!entry) {
      return;
    }
    const path = this._editorPath(entry);
    let note = trans.__('This entry is outside the server root: it is edited here, and each save is a new version.');
    if (path !== null) {
      try {
        await this.options.openFile(path);
        return;
      } catch (err) {
        note = trans.__(
          'JupyterLab cannot open %1 (%2; hidden folders need `c.ContentsManager.allow_hidden = True`): it is edited here, and each save is a new version.',
          path,
          (err as Error).message
        );
      }
    }
    const saved = await editHarnessEntry(this.model, entry, note, trans);
    if (saved) {
      this._setStatus(trans.__('%1 %2: saved as v%3.', saved.kind, saved.id, saved.version ?? '?'));
    }
  }

  private _diffPane(): HTMLElement | null {
    return this._detail.querySelector('.jp-PrimeHarness-diffPane');
  }

  private async _showDiff(version: number): Promise<void> {
    const result = await this.model.diff(version);
    const pane = this._diffPane();
    if (!result || !pane) {
      return;
    }
    const { pair, diff } = result;
    const stat = diffStat(diff);
    pane.replaceChildren(h('h4', {}, `v${pair[0]} → v${pair[1]} (+${stat.added} −${stat.removed})`), diffNode(diff, this._trans));
  }

  private async _showVersion(version: number): Promise<void> {
    const v = await this.model.version(version);
    const pane = this._diffPane();
    if (!v || !pane) {
      return;
    }
    const files = Object.entries(v.after || {});
    pane.replaceChildren(
      h('h4', {}, this._trans.__('v%1 (%2 by %3)', version, v.op, v.author)),
      ...files.map(([name, text]) => h('div', {}, h('strong', {}, name), h('pre', { className: 'jp-PrimeHarness-content' }, text)))
    );
  }

  private async _rollback(version: number): Promise<void> {
    const trans = this._trans;
    const sel = this.model.selected;
    if (!sel) {
      return;
    }
    const ok = await showDialog({
      title: trans.__('Roll back?'),
      body: trans.__('Make %1 %2 exactly what it was at version %3? This is recorded as a new version.', sel.kind, sel.id, version),
      buttons: [Dialog.cancelButton({ label: trans.__('Cancel') }), Dialog.warnButton({ label: trans.__('Roll back') })]
    });
    if (!ok.button.accept) {
      return;
    }
    const v = await this.model.rollback(version, trans.__('rolled back to version %1 from the Harness view', version));
    if (v) {
      this._setStatus(trans.__('%1 %2: rolled back to v%3 (now v%4).', sel.kind, sel.id, version, v.version));
    }
  }

  private async _review(rid: string, action: 'approve' | 'reject' | 'rollback', edit?: number): Promise<void> {
    const r = await this.model.review(rid, action, edit);
    const failed = (r.edits || []).filter(e => e.status === 'failed' || e.status === 'refused');
    this._setStatus(
      `${this._trans.__('Refinement %1: %2', rid, r.status)}` +
        (failed.length ? ` — ${failed.map(e => `${editLabel(e)}: ${e.note || e.status}`).join('; ')}` : ''),
      failed.length > 0
    );
  }

  private _setStatus(text: string, error = false): void {
    this._status.textContent = text;
    this._status.classList.toggle('jp-mod-error', error);
    this._status.style.display = text ? '' : 'none';
  }

  private _renderErrors(): void {
    const errors = this.model.listing?.errors || [];
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
    const trans = this._trans;
    const entries = this.model.listing?.entries || [];
    const sel = this.model.selected;
    const groups = groupEntries(entries, this._search.value);
    this._list.replaceChildren(
      ...groups.map(g =>
        h(
          'div',
          { className: 'jp-PrimeHarness-group', 'data-kind': g.kind },
          h(
            'div',
            { className: 'jp-PrimeHarness-groupLabel' },
            h('span', {}, `${g.label} (${g.entries.length})`),
            h(
              'button',
              {
                type: 'button',
                className: 'jp-PrimeHarness-add',
                'data-action': 'new',
                'data-kind': g.kind,
                title: trans.__('New %1…', g.label),
                'aria-label': trans.__('New %1…', g.label)
              },
              '+'
            )
          ),
          g.entries.length ? null : kindHint(g.kind),
          ...g.entries.map(e =>
            h(
              'div',
              {
                className:
                  'jp-PrimeHarness-entry' + (sel && sel.kind === e.kind && sel.id === e.id ? ' jp-mod-selected' : ''),
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
    const trans = this._trans;
    const list = sortRefinements([...this.model.refinements]);
    if (!list.length) {
      this._refinements.replaceChildren(
        h(
          'div',
          { className: 'jp-PrimeHarness-hint' },
          trans.__('No refinements yet. “Refine…” asks the model to improve the harness from recent sessions.')
        )
      );
      return;
    }
    const highlighted = this._refinements.querySelector<HTMLElement>('.jp-mod-highlighted')?.dataset.refinement;
    this._refinements.replaceChildren(
      ...list.map(r => {
        const pending = pendingEdits(r);
        return h(
          'div',
          {
            className: 'jp-PrimeHarness-refinement' + (r.id === highlighted ? ' jp-mod-highlighted' : ''),
            'data-refinement': r.id,
            'data-status': r.status
          },
          h(
            'div',
            { className: 'jp-PrimeHarness-refinementHead' },
            h('span', { className: `jp-PrimeHarness-refStatus jp-mod-${r.status}` }, r.status),
            h('strong', {}, r.summary || r.error || r.id),
            h('span', { className: 'jp-PrimeHarness-entryMeta' }, `${r.id} · ${r.trigger || r.author || ''} · ${when(r.created)}`)
          ),
          r.rationale ? h('div', { className: 'jp-PrimeHarness-rationale' }, trans.__('Why: %1', r.rationale)) : null,
          r.expected_outcome ? h('div', { className: 'jp-PrimeHarness-rationale' }, trans.__('Expected: %1', r.expected_outcome)) : null,
          r.error && r.summary ? h('div', { className: 'jp-PrimeHarness-error' }, r.error) : null,
          h(
            'div',
            { className: 'jp-PrimeHarness-refActions' },
            pending.length > 1 ? button(trans.__('Approve all %1', pending.length), 'approve', {}, true) : null,
            pending.length > 1 ? button(trans.__('Reject all'), 'reject') : null,
            canRollbackRefinement(r) ? button(trans.__('Roll back refinement'), 'rollback-refinement') : null
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
                ...(e.flags || []).map(f => h('span', { className: 'jp-PrimeHarness-flag', title: trans.__('needs a person even under auto') }, f)),
                e.status === 'pending' ? button(trans.__('Approve'), 'approve', { 'data-edit': e.index }, true) : null,
                e.status === 'pending' ? button(trans.__('Reject'), 'reject', { 'data-edit': e.index }) : null
              ),
              e.reason ? h('div', { className: 'jp-PrimeHarness-rationale' }, e.reason) : null,
              e.note ? h('div', { className: 'jp-PrimeHarness-entryMeta' }, e.note) : null,
              e.content
                ? h(
                    'details',
                    {},
                    h('summary', {}, e.title ? trans.__('%1 — content', e.title) : trans.__('content')),
                    h('pre', { className: 'jp-PrimeHarness-content' }, e.content)
                  )
                : null
            )
          )
        );
      })
    );
  }

  private _trans: TranslationBundle;
  private _search: HTMLInputElement;
  private _policy: HTMLSpanElement;
  private _status: HTMLDivElement;
  private _errors: HTMLDivElement;
  private _list: HTMLDivElement;
  private _detail: HTMLDivElement;
  private _refinements: HTMLDivElement;
}

/** What the review policy means, in one line. */
function policyText(policy: string, trans: TranslationBundle): string {
  return policy === 'auto'
    ? trans.__('review policy: auto (refinement edits apply at once; risky ones wait for you)')
    : trans.__('review policy: review (refinement edits wait for you to approve them)');
}

/** A kind with no entries yet says what an entry of it is (the protocol's own words; `code`
 * in backticks), and where the harness is explained. */
function kindHint(kind: HarnessKind): HTMLElement {
  return h('div', { className: 'jp-PrimeHarness-kindHint' }, ...withCode(HARNESS_KINDS[kind].description));
}

/** Text with `code` in backticks, as nodes. */
function withCode(text: string): (string | HTMLElement)[] {
  return text.split('`').map((t: string, i: number) => (i % 2 ? h('code', {}, t) : t));
}

/** The "What is this?" dialog: each kind in a line, what the review policy does, where the
 * files are and where the docs are. */
function aboutHarness(trans: TranslationBundle): Widget {
  const kinds = (Object.keys(HARNESS_KINDS) as HarnessKind[]).map(k =>
    h('li', {}, h('strong', {}, HARNESS_KINDS[k].plural), ': ', ...withCode(HARNESS_KINDS[k].description))
  );
  return new Widget({
    node: h(
      'div',
      { className: 'jp-PrimeHarness-aboutBody' },
      h('p', {}, trans.__('What every agent gets besides its task, kept as files under .prime/harness/ (this project) and ~/.prime/harness/ (all projects), each change versioned:')),
      h('ul', {}, ...kinds),
      h('p', {}, trans.__('Refine… asks a model to propose edits from recent sessions. With the review policy "review" (the default) they wait here for you to approve or reject each; with "auto" they apply at once, except risky ones (c.Harness.review_policy).')),
      h('p', {}, trans.__('More: the "Continual Harness" section of docs/architecture.md in the prime_kernel sources, and `prime-agent harness --help`.'))
    )
  });
}
