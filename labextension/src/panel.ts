/**
 * The Agents side panel: a virtualised, filterable tree of agent sessions with live state and
 * usage, columns other extensions can add, and the New agent form. It renders what
 * `IPrimeSessions` holds, at once on each change (or when next shown, if hidden).
 */
import { Toolbar, ToolbarButton } from '@jupyterlab/apputils';
import type { TranslationBundle } from '@jupyterlab/translation';
import { addIcon, caretDownIcon, caretRightIcon, refreshIcon } from '@jupyterlab/ui-components';
import { DisposableDelegate, IDisposable } from '@lumino/disposable';
import { Message } from '@lumino/messaging';
import { Panel, Widget } from '@lumino/widgets';

import { h, stateBadge } from './dom';
import { NewAgentForm } from './form';
import { elapsedSeconds, formatCost, formatElapsed, formatTokens, sessionLabel } from './format';
import { agentsIcon } from './icons';
import { sessionMarks } from './longrun';
import { Session, SESSION_STATES } from './protocol';
import { isTerminal } from './states';
import type { IAgentsColumn, IPrimeAgentsPanel, IPrimeSessions, IPrimeSettings, ISessionsChange } from './tokens';
import { buildTree, countByState, filterTree, flattenTree, IRow, ITreeNode, visibleRange } from './tree';

/**
 * Height of one row of the tree, in px (fixed, for virtualisation): its title on up to two lines
 * (it wraps, not cut at a side bar's width), then its state, marks, elapsed time, model and
 * usage on a line below.
 */
export const ROW_HEIGHT = 64;

export interface IAgentsPanelOptions {
  sessions: IPrimeSessions;
  settings: IPrimeSettings;
  trans: TranslationBundle;
  openSession: (id: string) => void;
}

/** A row's node and what it shows. */
interface IRenderedRow {
  session: Session;
  /** Its place and state in the list (index, depth, collapsed, matches, descendants, selected). */
  key: string;
  columns: readonly IAgentsColumn[];
  node: HTMLElement;
}

export class AgentsPanel extends Panel implements IPrimeAgentsPanel {
  constructor(options: IAgentsPanelOptions) {
    super();
    const { sessions, trans } = options;
    this.sessions = sessions;
    this._trans = trans;
    this._openSession = options.openSession;
    this.id = 'prime-kernel:agents';
    this.title.icon = agentsIcon;
    this.title.caption = trans.__('Agents');
    this.addClass('jp-PrimeAgents');
    this._columns = this._builtinColumns();
    this.addWidget(this._createHeader());
    this._form = new NewAgentForm({
      sessions,
      settings: options.settings,
      trans,
      onStarted: s => {
        this.showForm(false);
        this._openSession(s.id);
      },
      onClose: () => this.showForm(false)
    });
    this._form.hide(); // until asked for
    this.addWidget(this._form);
    this.addWidget(this._createFilters());
    this.addWidget(this._createList());
    const footer = new Widget({ node: h('div', { className: 'jp-PrimeAgents-footer' }) });
    this._footer = footer.node;
    this.addWidget(footer);

    this.sessions.changed.connect(this._onChanged, this);
    this._update();
  }

  readonly sessions: IPrimeSessions;

  get widget(): Widget {
    return this;
  }

  /** The rows currently shown (after filtering and collapsing). */
  get rows(): IRow[] {
    return this._rows;
  }

  addToolbarItem(name: string, item: Widget): void {
    this._toolbar.addItem(name, item);
  }

  addColumn(column: IAgentsColumn): IDisposable {
    this._columns = [...this._columns.filter(c => c.id !== column.id), column].sort((a, b) => a.rank - b.rank);
    this._renderWindow();
    return new DisposableDelegate(() => {
      this._columns = this._columns.filter(c => c !== column);
      this._renderWindow();
    });
  }

  showForm(show = true): void {
    if (show) {
      this._form.show();
      void this._form.activateForm();
    } else {
      this._form.hide();
    }
    this._newButton.pressed = show;
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    if (this._ticker !== null) {
      clearInterval(this._ticker);
    }
    this.sessions.changed.disconnect(this._onChanged, this);
    super.dispose();
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    if (!this.sessions.loaded) {
      void this.sessions.refresh();
    }
    // Tick elapsed times of live sessions.
    this._ticker = setInterval(() => this._tick(), 1000);
  }

  protected onBeforeDetach(msg: Message): void {
    if (this._ticker !== null) {
      clearInterval(this._ticker);
      this._ticker = null;
    }
    super.onBeforeDetach(msg);
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    this._geometry = null;
    if (this._stale) {
      this._update();
    } else {
      this._renderWindow();
    }
  }

  protected onResize(msg: Widget.ResizeMessage): void {
    super.onResize(msg);
    this._geometry = null;
    this._scheduleRender();
  }

  /** The title, and a toolbar with New agent and Refresh (other plugins add items to it). */
  private _createHeader(): Panel {
    const trans = this._trans;
    const header = new Panel();
    header.addClass('jp-PrimeAgents-header');
    header.addWidget(new Widget({ node: h('span', { className: 'jp-PrimeAgents-title' }, trans.__('Agents')) }));
    this._toolbar = new Toolbar();
    this._newButton = new ToolbarButton({
      icon: addIcon,
      label: trans.__('New agent'),
      tooltip: trans.__('Start a new agent'),
      className: 'jp-PrimeAgents-newButton',
      onClick: () => this.showForm(!this._form.isVisible)
    });
    this._toolbar.addItem('new-agent', this._newButton);
    this._toolbar.addItem(
      'refresh',
      new ToolbarButton({
        icon: refreshIcon,
        tooltip: trans.__('Refresh the session list'),
        onClick: () => void this.sessions.refresh()
      })
    );
    header.addWidget(this._toolbar);
    return header;
  }

  /** The filters: text, and a chip per state. */
  private _createFilters(): Widget {
    const trans = this._trans;
    const filters = new Widget({ node: h('div', { className: 'jp-PrimeAgents-filters' }) });
    this._search = h('input', {
      className: 'jp-mod-styled jp-PrimeAgents-search',
      type: 'search',
      placeholder: trans.__('Filter by name, prompt, id…'),
      'aria-label': trans.__('Filter sessions')
    });
    this._search.addEventListener('input', () => this._update());
    this._chips = h('div', { className: 'jp-PrimeAgents-chips', role: 'group', 'aria-label': trans.__('Filter by state') });
    this._chips.addEventListener('click', ev => this._onChipClick(ev));
    filters.node.append(this._search, this._chips);
    return filters;
  }

  /** The virtualised list: a spacer as tall as every row, the rows in view drawn over it. */
  private _createList(): Widget {
    const list = new Widget({ node: h('div', { className: 'jp-PrimeAgents-list', role: 'tree', tabindex: 0 }) });
    this._list = list.node;
    this._spacer = h('div', { className: 'jp-PrimeAgents-spacer' });
    this._empty = h('div', { className: 'jp-PrimeAgents-empty' });
    this._list.append(this._spacer, this._empty);
    this._list.addEventListener('scroll', () => {
      this._geometry = null;
      this._scheduleRender();
    });
    this._list.addEventListener('click', ev => this._onListClick(ev));
    this._list.addEventListener('keydown', ev => this._onListKey(ev));
    return list;
  }

  /** A state chip toggles its state in the filter; "all" clears it. */
  private _onChipClick(ev: MouseEvent): void {
    const chip = (ev.target as HTMLElement).closest('[data-state-filter]') as HTMLElement | null;
    if (!chip) {
      return;
    }
    const st = chip.dataset.stateFilter!;
    if (st === '*') {
      this._states.clear();
    } else if (this._states.has(st)) {
      this._states.delete(st);
    } else {
      this._states.add(st);
    }
    this._update();
  }

  private _onChanged(_: unknown, change: ISessionsChange): void {
    if (!this.isVisible && this.isAttached) {
      // A hidden panel (another side-bar tab is shown) catches up when shown again.
      this._stale = true;
    } else if (this._stale || change.all || !this._patch(change.ids)) {
      this._update();
    }
  }

  /** Build the tree and its rows again from every session. */
  private _update(): void {
    this._stale = false;
    // Geometry first: read after a DOM write, it would force a layout of the whole page.
    const viewport = this._viewport();
    const sessions = this.sessions.sessions;
    const text = this._search.value;
    this._forest = buildTree(sessions);
    const filtered = this._filtered() ? filterTree(this._forest, { states: this._states, text }) : this._forest;
    this._rows = flattenTree(filtered, this._collapsed);
    this._nodes.clear();
    const index = (n: ITreeNode) => {
      this._nodes.set(n.session.id, n);
      n.children.forEach(index);
    };
    this._forest.forEach(index);
    this._rowOf.clear();
    for (const row of this._rows) {
      this._rowOf.set(row.session.id, row);
    }
    this._renderAll(viewport);
  }

  /**
   * Take changed records of sessions already shown, in place: the tree keeps its shape (a
   * session's parent and creation time never change), so an update costs what changed, not
   * the whole list. False when the shape may change (a new session, a filter to apply again).
   */
  private _patch(ids: ReadonlySet<string>): boolean {
    if (this._filtered()) {
      return false;
    }
    for (const id of ids) {
      if (!this._nodes.has(id) || !this.sessions.get(id)) {
        return false;
      }
    }
    const viewport = this._viewport();
    for (const id of ids) {
      const session = this.sessions.get(id)!;
      this._nodes.get(id)!.session = session;
      const row = this._rowOf.get(id);
      if (row) {
        row.session = session;
      }
    }
    this._renderAll(viewport);
    return true;
  }

  private _filtered(): boolean {
    return this._states.size > 0 || this._search.value.trim() !== '';
  }

  private _renderAll(viewport: { top: number; height: number }): void {
    this._renderChips(countByState(this.sessions.sessions));
    this._renderFooter(this._forest);
    this._renderWindow(viewport);
  }

  /**
   * Where the list is scrolled and how tall it is. Read once after a scroll or a resize (when
   * layout is clean) and kept: read after a DOM write, it would force a layout of the page.
   */
  private _viewport(): { top: number; height: number } {
    if (!this._geometry) {
      this._geometry = { top: this._list.scrollTop, height: this._list.clientHeight || 600 };
    }
    return this._geometry;
  }

  /** Elapsed times of the live sessions shown, once a second (only their text changes). */
  private _tick(): void {
    if (!this.isVisible) {
      return;
    }
    const now = Date.now();
    for (const { session, node } of this._rendered.values()) {
      if (!isTerminal(session.state)) {
        const elapsed = node.querySelector('.jp-PrimeAgents-elapsed');
        if (elapsed) {
          elapsed.textContent = formatElapsed(elapsedSeconds(session, now));
        }
      }
    }
  }

  private _renderChips(counts: Record<string, number>): void {
    // Most updates change no count: the chips are drawn again only when one changed.
    const key = `${this.sessions.sessions.length}|${[...this._states].join()}|${SESSION_STATES.map(st => counts[st]).join()}`;
    if (key === this._chipsKey) {
      return;
    }
    this._chipsKey = key;
    const trans = this._trans;
    const chip = (state: string, label: string, active: boolean, title?: string) =>
      h(
        'button',
        {
          className: 'jp-PrimeAgents-chip' + (state === '*' ? '' : ` jp-PrimeAgents-state-${state}`) + (active ? ' jp-mod-active' : ''),
          'data-state-filter': state,
          'aria-pressed': active ? 'true' : 'false',
          title,
          type: 'button'
        },
        label
      );
    const chips = [chip('*', trans.__('All %1', this.sessions.sessions.length), this._states.size === 0)];
    for (const st of SESSION_STATES) {
      const active = this._states.has(st);
      if (counts[st] || active) {
        chips.push(chip(st, `${st} ${counts[st] || 0}`, active, trans.__('Show only %1 sessions (click again to clear)', st)));
      }
    }
    this._chips.replaceChildren(...chips);
  }

  private _renderFooter(forest: readonly ITreeNode[]): void {
    const all = this.sessions.sessions;
    let tokens = 0;
    let cost = 0;
    for (const { session } of forest) {
      tokens += session.usage.subtree.total_tokens;
      cost += session.usage.subtree.cost;
    }
    let active = 0;
    for (const s of all) {
      active += isTerminal(s.state) ? 0 : 1;
    }
    const trans = this._trans;
    this._footer.textContent = all.length
      ? `${trans._n('%1 session', '%1 sessions', all.length)} · ${trans.__('%1 active', active)} · ${trans.__('%1 tok', formatTokens(tokens))} · ${formatCost(cost)}`
      : '';
  }

  private _scheduleRender(): void {
    if (this._raf !== null) {
      return;
    }
    this._raf = requestAnimationFrame(() => {
      this._raf = null;
      this._renderWindow();
    });
  }

  private _emptyMessage(): string {
    const trans = this._trans;
    const { error, loaded, sessions } = this.sessions;
    if (error && !sessions.length) {
      return trans.__('The agents service is unreachable (%1). Is the prime_kernel server extension enabled?', error);
    }
    if (!loaded) {
      return trans.__('Loading agent sessions…');
    }
    if (!sessions.length) {
      return trans.__('No agent sessions yet. Click “New agent” to start one.');
    }
    return trans.__('No sessions match the filter.');
  }

  private _renderWindow(viewport = this._viewport()): void {
    const rows = this._rows;
    this._spacer.style.height = `${rows.length * ROW_HEIGHT}px`;
    if (!rows.length) {
      this._empty.textContent = this._emptyMessage();
      this._empty.style.display = '';
      this._list.classList.toggle('jp-mod-error', !!this.sessions.error);
      this._spacer.replaceChildren();
      this._rendered.clear();
      return;
    }
    this._empty.style.display = 'none';
    this._list.classList.remove('jp-mod-error');
    const { start, end } = visibleRange(rows.length, viewport.top, viewport.height, ROW_HEIGHT);
    const now = Date.now();
    // A row whose session and place are unchanged keeps its node, and only the others are
    // drawn again: the browser then restyles and lays out just those.
    const rendered = new Map<string, IRenderedRow>();
    for (let i = start; i < end; i++) {
      const row = rows[i];
      const key = `${row.session.id}|${i}|${row.depth}|${row.collapsed}|${row.matches}|${row.descendants}|${row.session.id === this._selected}`;
      const old = this._rendered.get(row.session.id);
      const keep = old && old.session === row.session && old.key === key && old.columns === this._columns;
      rendered.set(row.session.id, keep ? old : { session: row.session, key, columns: this._columns, node: this._renderRow(row, i, now) });
    }
    for (const [id, old] of this._rendered) {
      if (rendered.get(id)?.node !== old.node) {
        old.node.remove();
      }
    }
    // In the DOM in the order shown (what a screen reader follows), moving as few as possible.
    let next = this._spacer.firstChild;
    for (const r of rendered.values()) {
      if (r.node === next) {
        next = next.nextSibling;
      } else {
        this._spacer.insertBefore(r.node, next);
      }
    }
    this._rendered = rendered;
  }

  /** The model (or notebook), tokens and cost columns: own, and the subtree's when it differs. */
  private _builtinColumns(): IAgentsColumn[] {
    const trans = this._trans;
    return [
      {
        id: 'model',
        rank: 10,
        render: s => (s.kind === 'notebook' ? s.notebook_path || trans.__('notebook') : s.model || '')
      },
      {
        id: 'tokens',
        rank: 20,
        title: trans.__('tokens: own / subtree'),
        render: ({ usage: { own, subtree } }) =>
          trans.__(
            '%1 tok',
            formatTokens(own.total_tokens) + (subtree.total_tokens !== own.total_tokens ? ` / Σ${formatTokens(subtree.total_tokens)}` : '')
          )
      },
      {
        id: 'cost',
        rank: 30,
        title: trans.__('cost: own / subtree'),
        render: ({ usage: { own, subtree } }) => formatCost(own.cost) + (subtree.cost !== own.cost ? ` / Σ${formatCost(subtree.cost)}` : '')
      }
    ];
  }

  private _renderRow(row: IRow, index: number, now: number): HTMLElement {
    const s = row.session;
    const trans = this._trans;
    const { own, subtree } = s.usage;
    const caret = row.hasChildren
      ? h('span', {
          className: 'jp-PrimeAgents-caret',
          'data-toggle': s.id,
          title: row.collapsed ? trans._n('Expand (%1 sub-agent)', 'Expand (%1 sub-agents)', row.descendants) : trans.__('Collapse')
        })
      : h('span', { className: 'jp-PrimeAgents-caret jp-mod-leaf' });
    if (row.hasChildren) {
      (row.collapsed ? caretRightIcon : caretDownIcon).element({ container: caret, tag: 'span' });
    }
    const label = sessionLabel(s);
    const meta = this._columns.map(c => {
      const value = c.render(s);
      return h('span', { className: `jp-PrimeAgents-col jp-PrimeAgents-col-${c.id} jp-PrimeAgents-${c.id}`, title: c.title }, value ?? '');
    });
    const el = h(
      'div',
      {
        className:
          'jp-PrimeAgents-row' +
          (row.matches ? '' : ' jp-mod-context') +
          (s.id === this._selected ? ' jp-mod-selected' : '') +
          (s.kind === 'notebook' ? ' jp-mod-notebook' : ''),
        role: 'treeitem',
        'aria-level': row.depth + 1,
        'aria-expanded': row.hasChildren ? (!row.collapsed).toString() : undefined,
        'data-session-id': s.id,
        'data-state': s.state,
        'data-index': index,
        title:
          `${label}\n${s.id} · ${s.state}${s.error ? `\n${s.error}` : ''}\n` +
          `${trans.__('own: %1 tok, %2', formatTokens(own.total_tokens), formatCost(own.cost))}\n` +
          trans.__('subtree: %1 tok, %2', formatTokens(subtree.total_tokens), formatCost(subtree.cost))
      },
      h(
        'div',
        { className: 'jp-PrimeAgents-rowMain' },
        caret,
        h('span', { className: 'jp-PrimeAgents-label' }, label),
        row.collapsed ? h('span', { className: 'jp-PrimeAgents-more' }, `+${row.descendants}`) : null
      ),
      h(
        'div',
        { className: 'jp-PrimeAgents-rowMeta' },
        stateBadge(s.state),
        ...sessionMarks(s, trans).map(m =>
          h('span', { className: `jp-PrimeAgents-mark jp-PrimeAgents-mark-${m.kind} jp-mod-${m.status || 'none'}`, title: m.title }, m.label)
        ),
        h('span', { className: 'jp-PrimeAgents-elapsed' }, formatElapsed(elapsedSeconds(s, now))),
        ...meta
      )
    );
    el.style.top = `${index * ROW_HEIGHT}px`;
    el.style.height = `${ROW_HEIGHT}px`;
    el.style.paddingLeft = `${4 + row.depth * 14}px`;
    return el;
  }

  private _onListClick(ev: MouseEvent): void {
    const target = ev.target as HTMLElement;
    const toggle = target.closest('[data-toggle]') as HTMLElement | null;
    if (toggle) {
      this._toggle(toggle.dataset.toggle!);
      return;
    }
    const row = target.closest('.jp-PrimeAgents-row') as HTMLElement | null;
    if (row && row.dataset.sessionId) {
      this._selected = row.dataset.sessionId;
      this._renderWindow();
      this._openSession(row.dataset.sessionId);
    }
  }

  private _onListKey(ev: KeyboardEvent): void {
    if (!this._rows.length) {
      return;
    }
    let idx = this._rows.findIndex(r => r.session.id === this._selected);
    const row = idx >= 0 ? this._rows[idx] : null;
    switch (ev.key) {
      case 'ArrowDown':
        idx = Math.min(this._rows.length - 1, idx + 1);
        break;
      case 'ArrowUp':
        idx = Math.max(0, idx - 1);
        break;
      case 'ArrowLeft':
        if (row && row.hasChildren && !row.collapsed) {
          this._toggle(row.session.id);
        }
        ev.preventDefault();
        return;
      case 'ArrowRight':
        if (row && row.collapsed) {
          this._toggle(row.session.id);
        }
        ev.preventDefault();
        return;
      case 'Enter':
        if (row) {
          this._openSession(row.session.id);
        }
        ev.preventDefault();
        return;
      default:
        return;
    }
    ev.preventDefault();
    this._selected = this._rows[idx].session.id;
    const top = idx * ROW_HEIGHT;
    if (top < this._list.scrollTop) {
      this._list.scrollTop = top;
    } else if (top + ROW_HEIGHT > this._list.scrollTop + this._list.clientHeight) {
      this._list.scrollTop = top + ROW_HEIGHT - this._list.clientHeight;
    }
    this._geometry = null;
    this._renderWindow();
  }

  private _toggle(id: string): void {
    if (this._collapsed.has(id)) {
      this._collapsed.delete(id);
    } else {
      this._collapsed.add(id);
    }
    this._update();
  }

  private _trans: TranslationBundle;
  private _openSession: (id: string) => void;
  private _columns: IAgentsColumn[];
  private _form: NewAgentForm;
  private _toolbar!: Toolbar;
  private _newButton!: ToolbarButton;
  private _search!: HTMLInputElement;
  private _chips!: HTMLDivElement;
  private _list!: HTMLElement;
  private _spacer!: HTMLDivElement;
  private _empty!: HTMLDivElement;
  private _footer: HTMLElement;
  private _forest: ITreeNode[] = [];
  /** Every session's node of `_forest`, and its row when shown. */
  private _nodes = new Map<string, ITreeNode>();
  private _rowOf = new Map<string, IRow>();
  /** The row nodes in the list, by session id, with what they were drawn from. */
  private _rendered = new Map<string, IRenderedRow>();
  private _rows: IRow[] = [];
  private _states = new Set<string>();
  private _collapsed = new Set<string>();
  private _selected: string | null = null;
  private _stale = false;
  private _chipsKey = '';
  private _geometry: { top: number; height: number } | null = null;
  private _raf: number | null = null;
  private _ticker: ReturnType<typeof setInterval> | null = null;
}
