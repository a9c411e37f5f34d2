import { Toolbar, ToolbarButton } from '@jupyterlab/apputils';
import { addIcon, caretDownIcon, caretRightIcon, refreshIcon } from '@jupyterlab/ui-components';
import { Message } from '@lumino/messaging';
import { Panel, Widget } from '@lumino/widgets';

import { IAgentActions } from './actions';
import { h, stateBadge } from './dom';
import { NewAgentForm } from './form';
import { agentsIcon } from './icons';
import {
  ALL_STATES,
  buildTree,
  countByState,
  elapsedSeconds,
  filterTree,
  flattenTree,
  formatCost,
  formatElapsed,
  formatTokens,
  IRow,
  isTerminal,
  sessionLabel,
  visibleRange
} from './model';
import { AgentsStore } from './store';

/** Height of one row of the tree, in px (fixed, for virtualisation). */
export const ROW_HEIGHT = 46;

/**
 * The Agents side panel: a virtualised, filterable tree of agent sessions
 * with live state, usage and a "New agent" form.
 */
export class AgentsPanel extends Panel {
  constructor(
    readonly store: AgentsStore,
    private readonly actions: IAgentActions
  ) {
    super();
    this.id = 'prime-kernel:agents';
    this.title.icon = agentsIcon;
    this.title.caption = 'Agents';
    this.addClass('jp-PrimeAgents');

    // Header: title + toolbar.
    const header = new Panel();
    header.addClass('jp-PrimeAgents-header');
    header.addWidget(new Widget({ node: h('span', { className: 'jp-PrimeAgents-title' }, 'Agents') }));
    const toolbar = (this._toolbar = new Toolbar());
    this._newButton = new ToolbarButton({
      icon: addIcon,
      label: 'New agent',
      tooltip: 'Start a new agent',
      className: 'jp-PrimeAgents-newButton',
      onClick: () => this.showForm(!this._form.isVisible)
    });
    toolbar.addItem('new-agent', this._newButton);
    toolbar.addItem(
      'refresh',
      new ToolbarButton({
        icon: refreshIcon,
        tooltip: 'Refresh the session list',
        onClick: () => void this.store.refresh()
      })
    );
    header.addWidget(toolbar);
    this.addWidget(header);

    // New agent form (hidden until asked for).
    this._form = new NewAgentForm(
      store,
      s => {
        this.showForm(false);
        this.actions.openSession(s.id);
      },
      () => this.showForm(false)
    );
    this._form.hide();
    this.addWidget(this._form);

    // Filters: text + state chips.
    const filters = new Widget({ node: h('div', { className: 'jp-PrimeAgents-filters' }) });
    this._search = h('input', {
      className: 'jp-mod-styled jp-PrimeAgents-search',
      type: 'search',
      placeholder: 'Filter by name, prompt, id…',
      'aria-label': 'Filter sessions'
    });
    this._search.addEventListener('input', () => this._update());
    this._chips = h('div', { className: 'jp-PrimeAgents-chips', role: 'group', 'aria-label': 'Filter by state' });
    this._chips.addEventListener('click', ev => {
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
    });
    filters.node.append(this._search, this._chips);
    this.addWidget(filters);

    // The virtualised list.
    const listWidget = new Widget({ node: h('div', { className: 'jp-PrimeAgents-list', role: 'tree', tabindex: 0 }) });
    this._list = listWidget.node;
    this._spacer = h('div', { className: 'jp-PrimeAgents-spacer' });
    this._empty = h('div', { className: 'jp-PrimeAgents-empty' });
    this._list.append(this._spacer, this._empty);
    this._list.addEventListener('scroll', () => this._scheduleRender());
    this._list.addEventListener('click', ev => this._onListClick(ev));
    this._list.addEventListener('keydown', ev => this._onListKey(ev));
    this.addWidget(listWidget);

    const footer = new Widget({ node: h('div', { className: 'jp-PrimeAgents-footer' }) });
    this._footer = footer.node;
    this.addWidget(footer);

    this.store.changed.connect(this._update, this);
    this._update();
  }

  /** The rows currently shown (after filtering and collapsing). */
  get rows(): IRow[] {
    return this._rows;
  }

  /** Add an item to the panel's toolbar (e.g. the Harness button once it is available). */
  addToolbarItem(name: string, item: Widget): void {
    this._toolbar.addItem(name, item);
  }

  /** Show or hide the New agent form. */
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
    this.store.changed.disconnect(this._update, this);
    super.dispose();
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    if (!this.store.loaded) {
      void this.store.refresh();
    }
    // Tick elapsed times of live sessions.
    this._ticker = setInterval(() => {
      if (this.isVisible && this._rows.some(r => !isTerminal(r.session.state))) {
        this._renderWindow();
      }
    }, 1000);
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
    this._renderWindow();
  }

  protected onResize(msg: Widget.ResizeMessage): void {
    super.onResize(msg);
    this._scheduleRender();
  }

  private _update(): void {
    const sessions = this.store.sessions;
    const forest = buildTree(sessions);
    const filtered = filterTree(forest, { states: this._states, text: this._search.value });
    this._rows = flattenTree(filtered, this._collapsed);
    this._renderChips(countByState(sessions));
    this._renderFooter();
    this._renderWindow();
  }

  private _renderChips(counts: Record<string, number>): void {
    this._chips.replaceChildren();
    const all = h(
      'button',
      {
        className: 'jp-PrimeAgents-chip' + (this._states.size === 0 ? ' jp-mod-active' : ''),
        'data-state-filter': '*',
        'aria-pressed': this._states.size === 0 ? 'true' : 'false',
        type: 'button'
      },
      `All ${this.store.sessions.length}`
    );
    this._chips.append(all);
    for (const st of ALL_STATES) {
      const active = this._states.has(st);
      if (!counts[st] && !active) {
        continue;
      }
      this._chips.append(
        h(
          'button',
          {
            className: `jp-PrimeAgents-chip jp-PrimeAgents-state-${st}` + (active ? ' jp-mod-active' : ''),
            'data-state-filter': st,
            'aria-pressed': active ? 'true' : 'false',
            title: `Show only ${st} sessions (click again to clear)`,
            type: 'button'
          },
          `${st} ${counts[st] || 0}`
        )
      );
    }
  }

  private _renderFooter(): void {
    const roots = this.store.sessions.filter(
      s => !s.parent_id || !this.store.sessions.some(p => p.id === s.parent_id)
    );
    let tokens = 0;
    let cost = 0;
    for (const r of roots) {
      tokens += r.usage?.subtree?.total_tokens ?? 0;
      cost += r.usage?.subtree?.cost ?? 0;
    }
    const active = this.store.sessions.filter(s => !isTerminal(s.state)).length;
    this._footer.textContent = this.store.sessions.length
      ? `${this.store.sessions.length} session${this.store.sessions.length === 1 ? '' : 's'} · ${active} active · ${formatTokens(tokens)} tok · ${formatCost(cost)}`
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
    if (this.store.error && !this.store.sessions.length) {
      return `The agents service is unreachable (${this.store.error}). Is the prime_kernel server extension enabled?`;
    }
    if (!this.store.loaded) {
      return 'Loading agent sessions…';
    }
    if (!this.store.sessions.length) {
      return 'No agent sessions yet. Click “New agent” to start one.';
    }
    return 'No sessions match the filter.';
  }

  private _renderWindow(): void {
    const rows = this._rows;
    this._spacer.style.height = `${rows.length * ROW_HEIGHT}px`;
    if (!rows.length) {
      this._empty.textContent = this._emptyMessage();
      this._empty.style.display = '';
      this._list.classList.toggle('jp-mod-error', !!this.store.error);
      this._spacer.replaceChildren();
      return;
    }
    this._empty.style.display = 'none';
    this._list.classList.remove('jp-mod-error');
    const { start, end } = visibleRange(
      rows.length,
      this._list.scrollTop,
      this._list.clientHeight || 600,
      ROW_HEIGHT
    );
    const now = Date.now();
    const nodes: HTMLElement[] = [];
    for (let i = start; i < end; i++) {
      nodes.push(this._renderRow(rows[i], i, now));
    }
    this._spacer.replaceChildren(...nodes);
  }

  private _renderRow(row: IRow, index: number, now: number): HTMLElement {
    const s = row.session;
    const own = s.usage?.own || {};
    const sub = s.usage?.subtree || {};
    const caret = row.hasChildren
      ? h('span', {
          className: 'jp-PrimeAgents-caret',
          'data-toggle': s.id,
          title: row.collapsed ? `Expand (${row.descendants} sub-agents)` : 'Collapse'
        })
      : h('span', { className: 'jp-PrimeAgents-caret jp-mod-leaf' });
    if (row.hasChildren) {
      (row.collapsed ? caretRightIcon : caretDownIcon).element({ container: caret, tag: 'span' });
    }
    const tokensText =
      formatTokens(own.total_tokens ?? 0) +
      ((sub.total_tokens ?? 0) !== (own.total_tokens ?? 0) ? ` / Σ${formatTokens(sub.total_tokens)}` : '');
    const costText =
      formatCost(own.cost ?? 0) + ((sub.cost ?? 0) !== (own.cost ?? 0) ? ` / Σ${formatCost(sub.cost)}` : '');
    const label = sessionLabel(s);
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
        title: `${label}\n${s.id} · ${s.state}${s.error ? `\n${s.error}` : ''}\nown: ${formatTokens(own.total_tokens)} tok, ${formatCost(own.cost)}\nsubtree: ${formatTokens(sub.total_tokens)} tok, ${formatCost(sub.cost)}`
      },
      h(
        'div',
        { className: 'jp-PrimeAgents-rowMain' },
        caret,
        stateBadge(s.state),
        h('span', { className: 'jp-PrimeAgents-label' }, label),
        row.collapsed ? h('span', { className: 'jp-PrimeAgents-more' }, `+${row.descendants}`) : null,
        h('span', { className: 'jp-PrimeAgents-elapsed' }, formatElapsed(elapsedSeconds(s, now)))
      ),
      h(
        'div',
        { className: 'jp-PrimeAgents-rowMeta' },
        h('span', { className: 'jp-PrimeAgents-model' }, s.kind === 'notebook' ? (s.notebook_path || 'notebook') : (s.model || '')),
        h('span', { className: 'jp-PrimeAgents-tokens', title: 'tokens: own / subtree' }, `${tokensText} tok`),
        h('span', { className: 'jp-PrimeAgents-cost', title: 'cost: own / subtree' }, costText)
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
      this.actions.openSession(row.dataset.sessionId);
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
          this.actions.openSession(row.session.id);
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

  private _form: NewAgentForm;
  private _toolbar: Toolbar;
  private _newButton: ToolbarButton;
  private _search: HTMLInputElement;
  private _chips: HTMLDivElement;
  private _list: HTMLElement;
  private _spacer: HTMLDivElement;
  private _empty: HTMLDivElement;
  private _footer: HTMLElement;
  private _rows: IRow[] = [];
  private _states = new Set<string>();
  private _collapsed = new Set<string>();
  private _selected: string | null = null;
  private _raf: number | null = null;
  private _ticker: ReturnType<typeof setInterval> | null = null;
}
