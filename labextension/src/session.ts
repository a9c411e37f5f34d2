import { OutputArea, OutputAreaModel } from '@jupyterlab/outputarea';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { Message } from '@lumino/messaging';
import { Panel, Widget } from '@lumino/widgets';

import { PrimeAPI } from './api';
import { h, stateBadge } from './dom';
import {
  Coalescer,
  elapsedSeconds,
  formatBudget,
  formatCost,
  formatElapsed,
  formatTokens,
  IEvent,
  ISession,
  ISessionEmission,
  isTerminal,
  lastSeq,
  sessionLabel
} from './model';
import { AgentsStore } from './store';

export interface ISessionViewOptions {
  sessionId: string;
  store: AgentsStore;
  api: PrimeAPI;
  rendermime: IRenderMimeRegistry;
  openSession: (id: string) => void;
}

/**
 * A main-area view of one session: its header (state, usage, answer), its
 * trajectory (task, model messages, cells with rendered outputs, mail,
 * children, answer), refreshed live, and a box to message the agent.
 */
export class SessionView extends Panel {
  constructor(options: ISessionViewOptions) {
    super();
    this.sessionId = options.sessionId;
    this._store = options.store;
    this._api = options.api;
    this._rendermime = options.rendermime;
    this._openSession = options.openSession;
    this.addClass('jp-PrimeSession');
    this.id = `prime-kernel-session-${this.sessionId}`;

    this._header = new Widget({ node: h('div', { className: 'jp-PrimeSession-header' }) });
    this._trajectory = new Panel();
    this._trajectory.addClass('jp-PrimeSession-trajectory');
    this._status = h('div', { className: 'jp-PrimeSession-status', role: 'status' });

    this._input = h('textarea', {
      className: 'jp-mod-styled jp-PrimeSession-input',
      rows: 1,
      placeholder: 'Message this agent… (Enter to send, Shift+Enter for a new line)',
      'aria-label': 'Message'
    });
    this._send = h('button', { className: 'jp-mod-styled jp-mod-accept', type: 'button' }, 'Send');
    this._send.addEventListener('click', () => void this.sendMessage());
    this._input.addEventListener('keydown', ev => {
      if (ev.key === 'Enter' && !ev.shiftKey) {
        ev.preventDefault();
        void this.sendMessage();
      }
    });
    const composer = new Widget({
      node: h('div', { className: 'jp-PrimeSession-composer' }, this._input, this._send)
    });

    this.addWidget(this._header);
    this.addWidget(this._trajectory);
    this.addWidget(new Widget({ node: this._status }));
    this.addWidget(composer);

    this._coalescer = new Coalescer(() => this._fetchEvents(), 250);
    this._store.changed.connect(this._renderHeader, this);
    this._store.emission.connect(this._onEmission, this);
    this._poll = setInterval(() => {
      const s = this.session;
      if (!s || !isTerminal(s.state)) {
        void this._coalescer.request();
      }
    }, 10_000);
    this._renderHeader();
    void this._ensureSession();
    void this._coalescer.flush();
  }

  readonly sessionId: string;

  get session(): ISession | undefined {
    return this._store.get(this.sessionId);
  }

  /** The events shown so far, by seq. */
  get events(): IEvent[] {
    return this._events;
  }

  /** Fetch new events now. */
  refresh(): Promise<void> {
    void this._store.requestRefresh();
    return this._coalescer.flush();
  }

  async sendMessage(): Promise<void> {
    const message = this._input.value.trim();
    if (!message) {
      return;
    }
    this._send.disabled = true;
    try {
      await this._api.sendMessage(this.sessionId, message);
      this._input.value = '';
      this._setStatus('Message sent.');
    } catch (err) {
      this._setStatus(`Could not send the message: ${(err as Error).message}`, true);
    } finally {
      this._send.disabled = false;
    }
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    clearInterval(this._poll);
    if (this._ticker !== null) {
      clearInterval(this._ticker);
    }
    this._coalescer.dispose();
    this._store.changed.disconnect(this._renderHeader, this);
    this._store.emission.disconnect(this._onEmission, this);
    super.dispose();
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    this._ticker = setInterval(() => {
      const s = this.session;
      if (s && !isTerminal(s.state)) {
        this._renderHeader();
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

  protected onActivateRequest(msg: Message): void {
    super.onActivateRequest(msg);
    this._input.focus();
  }

  private async _ensureSession(): Promise<void> {
    if (this.session) {
      return;
    }
    try {
      const s = await this._api.getSession(this.sessionId);
      this._store.upsert([s]);
    } catch (err) {
      this._setStatus(`Could not load session ${this.sessionId}: ${(err as Error).message}`, true);
    }
  }

  private _onEmission(_: unknown, e: ISessionEmission): void {
    if (e.session_id === this.sessionId) {
      void this._coalescer.request();
    }
  }

  private async _fetchEvents(): Promise<void> {
    let incoming: IEvent[];
    try {
      incoming = await this._api.events(this.sessionId, lastSeq(this._events));
    } catch (err) {
      this._setStatus(`Could not load the trajectory: ${(err as Error).message}`, true);
      return;
    }
    if (this.isDisposed) {
      return;
    }
    const seen = new Set(this._events.map(e => e.seq));
    const fresh = incoming.filter(e => !seen.has(e.seq)).sort((a, b) => a.seq - b.seq);
    if (!fresh.length) {
      return;
    }
    const node = this._trajectory.node;
    const atBottom = node.scrollHeight - node.scrollTop - node.clientHeight < 48;
    for (const e of fresh) {
      this._events.push(e);
      this._trajectory.addWidget(renderEvent(e, this._rendermime, this._openSession));
    }
    if (this._status.classList.contains('jp-mod-error')) {
      this._setStatus('');
    }
    if (atBottom) {
      requestAnimationFrame(() => {
        node.scrollTop = node.scrollHeight;
      });
    }
  }

  private _setStatus(text: string, error = false): void {
    this._status.textContent = text;
    this._status.classList.toggle('jp-mod-error', error);
    this._status.style.display = text ? '' : 'none';
  }

  private _renderHeader(): void {
    const s = this.session;
    const node = this._header.node;
    if (!s) {
      node.replaceChildren(h('div', { className: 'jp-PrimeSession-title' }, this.sessionId));
      return;
    }
    const label = sessionLabel(s);
    this.title.label = `Agent: ${label}`;
    this.title.caption = `${label}\n${s.id} · ${s.state}`;
    this.node.dataset.state = s.state;
    const own = s.usage?.own || {};
    const sub = s.usage?.subtree || {};
    const parent = s.parent_id
      ? h('a', { className: 'jp-PrimeSession-link', href: '#', 'data-open': s.parent_id }, `parent ${s.parent_id}`)
      : null;
    const meta = h(
      'div',
      { className: 'jp-PrimeSession-meta' },
      h('span', {}, s.kind === 'notebook' ? `notebook ${s.notebook_path || ''}` : s.model || ''),
      h('span', { title: 'elapsed' }, `elapsed ${formatElapsed(elapsedSeconds(s))}`),
      h(
        'span',
        { title: 'own usage' },
        `${formatTokens(own.total_tokens ?? 0)} tok · ${formatCost(own.cost ?? 0)} · ${own.model_calls ?? 0} calls · ${own.cells ?? 0} cells`
      ),
      h('span', { title: 'subtree usage (this agent and all its sub-agents)' }, `Σ ${formatTokens(sub.total_tokens ?? 0)} tok · ${formatCost(sub.cost ?? 0)}`),
      h('span', { className: 'jp-PrimeSession-id', title: 'session id' }, s.id),
      s.kernel_id ? h('span', { className: 'jp-PrimeSession-id', title: 'kernel id' }, `kernel ${s.kernel_id.slice(0, 8)}`) : null,
      parent
    );
    const children: (Node | null)[] = [
      h('div', { className: 'jp-PrimeSession-title' }, stateBadge(s.state), h('span', {}, label)),
      meta
    ];
    if (s.budget && Object.keys(s.budget).length) {
      children.push(
        h(
          'div',
          { className: 'jp-PrimeSession-budget' },
          `Budget: ${formatBudget(s.budget)}`
        )
      );
    }
    if (s.error) {
      children.push(h('div', { className: 'jp-PrimeSession-error' }, s.error));
    }
    if (s.answer_repr) {
      children.push(
        h('div', { className: 'jp-PrimeSession-answer' }, h('strong', {}, 'Answer: '), h('code', {}, s.answer_repr))
      );
    }
    node.replaceChildren(...children.filter((c): c is Node => c !== null));
    node.onclick = ev => {
      const a = (ev.target as HTMLElement).closest('[data-open]') as HTMLElement | null;
      if (a) {
        ev.preventDefault();
        this._openSession(a.dataset.open!);
      }
    };
  }

  private _store: AgentsStore;
  private _api: PrimeAPI;
  private _rendermime: IRenderMimeRegistry;
  private _openSession: (id: string) => void;
  private _header: Widget;
  private _trajectory: Panel;
  private _status: HTMLDivElement;
  private _input: HTMLTextAreaElement;
  private _send: HTMLButtonElement;
  private _events: IEvent[] = [];
  private _coalescer: Coalescer;
  private _poll: ReturnType<typeof setInterval>;
  private _ticker: ReturnType<typeof setInterval> | null = null;
}

// ---------------------------------------------------------------------------
// Rendering one trajectory event
// ---------------------------------------------------------------------------

function fence(code: string, lang = 'python'): string {
  const runs = code.match(/`+/g) || [];
  const longest = runs.reduce((m, r) => Math.max(m, r.length), 0);
  const f = '`'.repeat(Math.max(3, longest + 1));
  return `${f}${lang}\n${code}\n${f}`;
}

function markdownWidget(rendermime: IRenderMimeRegistry, text: string): Widget {
  const renderer = rendermime.createRenderer('text/markdown');
  const model = rendermime.createModel({ data: { 'text/markdown': text }, trusted: false });
  void renderer.renderModel(model);
  renderer.addClass('jp-PrimeEvent-markdown');
  return renderer;
}

function fmtTime(ts: unknown): string {
  if (typeof ts === 'number') {
    return new Date(ts > 1e12 ? ts : ts * 1000).toLocaleTimeString();
  }
  if (typeof ts === 'string') {
    const d = new Date(ts);
    return isNaN(d.getTime()) ? ts : d.toLocaleTimeString();
  }
  return '';
}

/** One trajectory event as a widget. */
export function renderEvent(
  e: IEvent,
  rendermime: IRenderMimeRegistry,
  openSession: (id: string) => void
): Widget {
  const d = e.data || {};
  const item = new Panel();
  item.addClass('jp-PrimeEvent');
  item.addClass(`jp-PrimeEvent-${e.kind}`);
  item.node.dataset.seq = String(e.seq);
  item.node.dataset.kind = e.kind;
  const head = (...parts: (Node | string | null | undefined | false)[]) =>
    new Widget({
      node: h('div', { className: 'jp-PrimeEvent-head', title: `#${e.seq} ${fmtTime(e.ts)}` }, ...parts)
    });
  const text = (cls: string, t: string) => new Widget({ node: h('div', { className: cls }, t) });

  switch (e.kind) {
    case 'state':
      item.addWidget(head('→ ', stateBadge(String(d.state)), d.reason ? ` ${d.reason}` : ''));
      break;
    case 'task': {
      item.addWidget(
        head(
          h('strong', {}, 'Task'),
          d.model ? ` · ${d.model}` : '',
          d.context_type ? ` · context: ${d.context_type}` : '',
          d.budget ? ` · budget ${JSON.stringify(d.budget)}` : ''
        )
      );
      item.addWidget(text('jp-PrimeEvent-prompt', String(d.prompt ?? '')));
      break;
    }
    case 'model_call': {
      const u = d.usage || {};
      item.addWidget(
        head(
          `model call · ${d.model ?? ''} · ${formatTokens(u.total_tokens)} tok` +
            (u.prompt_tokens !== undefined ? ` (${formatTokens(u.prompt_tokens)} in / ${formatTokens(u.completion_tokens)} out)` : '') +
            ` · ${formatCost(d.cost)}` +
            (typeof d.duration === 'number' ? ` · ${d.duration.toFixed(1)}s` : '')
        )
      );
      break;
    }
    case 'assistant': {
      if (!d.content || !String(d.content).trim()) {
        // A message that only carries a tool call: the cell event shows the code.
        item.addClass('jp-mod-empty');
        break;
      }
      item.addWidget(head(h('strong', {}, 'Assistant')));
      item.addWidget(markdownWidget(rendermime, String(d.content)));
      break;
    }
    case 'cell': {
      const isUser = d.source === 'user';
      if (isUser) {
        item.addClass('jp-mod-user');
      }
      item.addWidget(
        head(
          h('span', { className: 'jp-PrimeEvent-prompt-count' }, `[${d.execution_count ?? ' '}]`),
          h('span', { className: `jp-PrimeEvent-source jp-mod-${isUser ? 'user' : 'agent'}` }, isUser ? 'user' : 'agent'),
          d.status ? h('span', { className: `jp-PrimeEvent-status jp-mod-${d.status}` }, String(d.status)) : null,
          typeof d.duration === 'number' ? ` ${d.duration.toFixed(2)}s` : ''
        )
      );
      item.addWidget(markdownWidget(rendermime, fence(String(d.code ?? ''))));
      const outputs = Array.isArray(d.outputs) ? d.outputs : [];
      if (outputs.length) {
        const model = new OutputAreaModel({ values: outputs, trusted: false });
        const area = new OutputArea({ model, rendermime });
        area.addClass('jp-PrimeEvent-outputs');
        area.disposed.connect(() => model.dispose());
        item.addWidget(area);
      }
      if (d.truncated_note) {
        item.addWidget(text('jp-PrimeEvent-note', String(d.truncated_note)));
      }
      break;
    }
    case 'observation': {
      const details = h(
        'details',
        { className: 'jp-PrimeEvent-observation' },
        h('summary', {}, 'What the model was shown'),
        h('pre', {}, String(d.text ?? ''))
      );
      item.addWidget(new Widget({ node: details }));
      break;
    }
    case 'child': {
      const link = h(
        'a',
        { href: '#', className: 'jp-PrimeSession-link', title: `Open ${d.child_id}` },
        String(d.name || d.child_id)
      );
      link.addEventListener('click', ev => {
        ev.preventDefault();
        openSession(String(d.child_id));
      });
      item.addWidget(head('spawned sub-agent ', link));
      if (d.prompt) {
        item.addWidget(text('jp-PrimeEvent-prompt', String(d.prompt)));
      }
      break;
    }
    case 'mail_in':
    case 'mail_out': {
      const incoming = e.kind === 'mail_in';
      const who = String((incoming ? d.from : d.to) ?? '');
      const whoNode = /^[A-Za-z]{0,2}[0-9a-f]{8,}$/.test(who)
        ? (() => {
            const a = h('a', { href: '#', className: 'jp-PrimeSession-link' }, who);
            a.addEventListener('click', ev => {
              ev.preventDefault();
              openSession(who);
            });
            return a;
          })()
        : who;
      item.addWidget(head(incoming ? 'message from ' : 'message to ', whoNode));
      item.addWidget(text('jp-PrimeEvent-message', String(d.message ?? '')));
      break;
    }
    case 'answer': {
      item.addWidget(head(h('strong', {}, d.kind === 'reply' ? 'Reply' : 'Answer')));
      item.addWidget(
        d.kind === 'reply'
          ? markdownWidget(rendermime, String(d.repr ?? ''))
          : new Widget({ node: h('pre', { className: 'jp-PrimeEvent-answerRepr' }, String(d.repr ?? '')) })
      );
      break;
    }
    case 'error':
      item.addWidget(head(h('strong', {}, 'Error')));
      item.addWidget(new Widget({ node: h('pre', { className: 'jp-PrimeEvent-errorText' }, String(d.message ?? '')) }));
      break;
    default:
      item.addWidget(head(e.kind));
      item.addWidget(new Widget({ node: h('pre', {}, JSON.stringify(d, null, 2)) }));
  }
  return item;
}
