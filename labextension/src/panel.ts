import { Widget } from '@lumino/widgets';

import { PrimeAPI } from './api';
import { ISession, sessionLabel } from './model';
import { agentsIcon } from './icons';

/**
 * The Agents side panel: lists agent sessions.
 */
export class AgentsPanel extends Widget {
  constructor(readonly api: PrimeAPI) {
    super();
    this.id = 'prime-kernel:agents';
    this.title.icon = agentsIcon;
    this.title.caption = 'Agents';
    this.title.label = '';
    this.addClass('jp-PrimeAgents');
    this._list = document.createElement('div');
    this._list.className = 'jp-PrimeAgents-list';
    const header = document.createElement('div');
    header.className = 'jp-PrimeAgents-header';
    header.textContent = 'Agents';
    this.node.append(header, this._list);
  }

  async refresh(): Promise<void> {
    let sessions: ISession[] = [];
    let error = '';
    try {
      sessions = await this.api.listSessions();
    } catch (err) {
      error = (err as Error).message;
    }
    this._render(sessions, error);
  }

  protected onAfterAttach(): void {
    void this.refresh();
  }

  private _render(sessions: ISession[], error: string): void {
    this._list.replaceChildren();
    if (!sessions.length) {
      const empty = document.createElement('div');
      empty.className = 'jp-PrimeAgents-empty';
      empty.textContent = error
        ? `Agents service unavailable (${error}).`
        : 'No agent sessions yet.';
      this._list.append(empty);
      return;
    }
    for (const s of sessions) {
      const row = document.createElement('div');
      row.className = 'jp-PrimeAgents-row';
      row.dataset.sessionId = s.id;
      const label = document.createElement('span');
      label.className = 'jp-PrimeAgents-label';
      label.textContent = sessionLabel(s);
      const badge = document.createElement('span');
      badge.className = `jp-PrimeAgents-badge jp-PrimeAgents-state-${s.state}`;
      badge.textContent = s.state;
      row.append(badge, label);
      this._list.append(row);
    }
  }

  private _list: HTMLDivElement;
}
