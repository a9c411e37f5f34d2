/**
 * A main-area view of one session: its header (state, usage, budget, answer), its goal and
 * schedules (goalSection.ts), its trajectory (each event drawn by the renderer registry) ending
 * with the reply the model is writing now (streamed; replaced by the stored events), and a box
 * to message the agent. It renders what its `SessionModel` holds and asks the model to act.
 */
import { InputDialog } from '@jupyterlab/apputils';
import type { IOutput } from '@jupyterlab/nbformat';
import { OutputArea, OutputAreaModel } from '@jupyterlab/outputarea';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import type { TranslationBundle } from '@jupyterlab/translation';
import { Message } from '@lumino/messaging';
import { Panel, Widget } from '@lumino/widgets';

import { formatBudget } from './budget';
import { h, stateBadge } from './dom';
import { elapsedSeconds, formatCost, formatElapsed, formatTokens, sessionLabel } from './format';
import { GoalSection } from './goalSection';
import { LiveReplyView } from './liveView';
import type { EventDataMap, TrajectoryEvent } from './protocol';
import { SessionModel } from './sessionModel';
import { isTerminal } from './states';
import type { IPrimeEventRenderers, IRenderContext, ISessionView } from './tokens';
import { IOutputLike, TracebackFolder } from './tracebacks';
import { VerifySection } from './verify';

export interface ISessionViewOptions {
  model: SessionModel;
  renderers: IPrimeEventRenderers;
  rendermime: IRenderMimeRegistry;
  trans: TranslationBundle;
  openSession: (id: string) => void;
  openRefinement: (id: string) => void;
}

/** A code fence long enough for any run of backticks in the code. */
function fence(code: string, lang = 'python'): string {
  const runs = code.match(/`+/g) || [];
  const longest = runs.reduce((m, r) => Math.max(m, r.length), 0);
  const f = '`'.repeat(Math.max(3, longest + 1));
  return `${f}${lang}\n${code}\n${f}`;
}

export class SessionView extends Panel implements ISessionView {
  constructor(options: ISessionViewOptions) {
    super();
    const { model, trans } = options;
    this.model = model;
    this._options = options;
    this._trans = trans;
    this.addClass('jp-PrimeSession');
    this.id = `prime-kernel-session-${model.id}`;

    this._header = new Widget({ node: h('div', { className: 'jp-PrimeSession-header' }) });
    this._header.node.addEventListener('click', ev => {
      const a = (ev.target as HTMLElement).closest('[data-open]') as HTMLElement | null;
      if (a) {
        ev.preventDefault();
        options.openSession(a.dataset.open!);
      }
    });
    this._control = new GoalSection({
      model,
      trans,
      openSession: options.openSession,
      report: (text, error) => this._setStatus(text, error)
    });
    this._verify = new VerifySection({
      model,
      trans,
      report: (text, error) => this._setStatus(text, error),
      askNote: async () => {
        const res = await InputDialog.getText({
          title: trans.__('The answer is wrong'),
          label: trans.__('What is wrong with it, or the right answer (optional): kept as the caution for similar tasks.'),
          okLabel: trans.__('Mark wrong')
        });
        return res.button.accept ? res.value || '' : null;
      }
    });
    this._trajectory = new Panel();
    this._trajectory.addClass('jp-PrimeSession-trajectory');
    this._live = new LiveReplyView(trans);
    this._trajectory.addWidget(this._live);
    this._status = h('div', { className: 'jp-PrimeSession-status', role: 'status' });

    this._input = h('textarea', {
      className: 'jp-mod-styled jp-PrimeSession-input',
      rows: 1,
      placeholder: trans.__('Message this agent… (Enter to send, Shift+Enter for a new line)'),
      'aria-label': trans.__('Message')
    });
    this._send = h('button', { className: 'jp-mod-styled jp-mod-accept', type: 'button' }, trans.__('Send'));
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
    this.addWidget(this._control);
    this.addWidget(this._verify);
    this.addWidget(this._trajectory);
    this.addWidget(new Widget({ node: this._status }));
    this.addWidget(composer);

    this._context = {
      trans,
      markdown: text => this._markdown(text),
      code: source => this._markdown(fence(source)),
      outputs: outputs => this._outputs(outputs),
      openSession: options.openSession,
      openRefinement: options.openRefinement
    };
    model.changed.connect(this._onChanged, this);
    model.added.connect(this._onAdded, this);
    model.live.changed.connect(this._onLive, this);
    this._onChanged();
    this._onAdded(model, model.events);
    this._onLive();
  }

  readonly model: SessionModel;

  get sessionId(): string {
    return this.model.id;
  }

  async sendMessage(): Promise<void> {
    const message = this._input.value.trim();
    if (!message) {
      return;
    }
    this._send.disabled = true;
    try {
      await this.model.send(message);
      this._input.value = '';
      this._setStatus(this._trans.__('Message sent.'));
    } catch (err) {
      this._setStatus(this._trans.__('Could not send the message: %1', (err as Error).message), true);
    } finally {
      this._send.disabled = false;
    }
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    if (this._ticker !== null) {
      clearInterval(this._ticker);
    }
    this.model.dispose();
    super.dispose();
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    this._ticker = setInterval(() => {
      const s = this.model.session;
      if (s && !isTerminal(s.state)) {
        this._renderHeader();
      }
      this._control.tick();
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

  private _onChanged(): void {
    this._renderHeader();
    this._control.render();
    this._verify.render();
    const error = this.model.error;
    // A load error goes once a fetch succeeds; an action's error stays until the next action.
    if (error !== null) {
      this._setStatus(this._trans.__('Could not load the session: %1', error), true);
      this._loadError = true;
    } else if (this._loadError) {
      this._setStatus('');
    }
  }

  private _onAdded(_: unknown, events: readonly TrajectoryEvent[]): void {
    if (!events.length) {
      return;
    }
    const follow = this._atBottom();
    for (const e of events) {
      // Before the live reply, which stays last.
      this._trajectory.insertWidget(this._trajectory.widgets.length - 1, this._options.renderers.render(e, this._context));
    }
    this._follow(follow);
  }

  /** The reply being written began, grew, ended, or was replaced by its stored events. */
  private _onLive(): void {
    const follow = this._atBottom();
    this._live.render(this.model.live.current);
    this._follow(follow);
  }

  /** Whether the trajectory is scrolled to (about) its end. */
  private _atBottom(): boolean {
    const node = this._trajectory.node;
    return node.scrollHeight - node.scrollTop - node.clientHeight < 48;
  }

  /** Keep the end in sight after a change, if it was in sight before. */
  private _follow(wasAtBottom: boolean): void {
    if (wasAtBottom) {
      const node = this._trajectory.node;
      requestAnimationFrame(() => {
        node.scrollTop = node.scrollHeight;
      });
    }
  }

  private _markdown(text: string): Widget {
    const { rendermime } = this._options;
    const renderer = rendermime.createRenderer('text/markdown');
    const model = rendermime.createModel({ data: { 'text/markdown': text }, trusted: false });
    void renderer.renderModel(model);
    renderer.addClass('jp-PrimeEvent-markdown');
    return renderer;
  }

  private _outputs(outputs: EventDataMap['cell']['outputs']): Widget {
    // The daemon records nbformat outputs as the kernel sent them (the protocol types only
    // `output_type`).
    const shown = this._tracebacks.fold(
      outputs as IOutputLike[],
      this._trans.__('(the same error as above: its traceback is shown there once)')
    );
    const model = new OutputAreaModel({ values: shown as IOutput[], trusted: false });
    const area = new OutputArea({ model, rendermime: this._options.rendermime });
    area.addClass('jp-PrimeEvent-outputs');
    area.disposed.connect(() => model.dispose());
    return area;
  }

  private _setStatus(text: string, error = false): void {
    this._loadError = false;
    this._status.textContent = text;
    this._status.classList.toggle('jp-mod-error', error);
    this._status.style.display = text ? '' : 'none';
  }

  private _renderHeader(): void {
    const s = this.model.session;
    const trans = this._trans;
    const node = this._header.node;
    if (!s) {
      node.replaceChildren(h('div', { className: 'jp-PrimeSession-title' }, this.model.id));
      return;
    }
    const label = sessionLabel(s);
    this.title.label = trans.__('Agent: %1', label);
    this.title.caption = `${label}\n${s.id} · ${s.state}`;
    this.node.dataset.state = s.state;
    const { own, subtree } = s.usage;
    const children: (Node | null)[] = [
      h('div', { className: 'jp-PrimeSession-title' }, stateBadge(s.state), h('span', {}, label)),
      h(
        'div',
        { className: 'jp-PrimeSession-meta' },
        h('span', {}, s.kind === 'notebook' ? trans.__('notebook %1', s.notebook_path || '') : s.model || ''),
        h('span', { title: trans.__('elapsed') }, trans.__('elapsed %1', formatElapsed(elapsedSeconds(s)))),
        h(
          'span',
          { title: trans.__('own usage') },
          `${trans.__('%1 tok', formatTokens(own.total_tokens))} · ${formatCost(own.cost)} · ` +
            `${trans._n('%1 call', '%1 calls', own.model_calls)} · ${trans._n('%1 cell', '%1 cells', own.cells)}`
        ),
        h(
          'span',
          { title: trans.__('subtree usage (this agent and all its sub-agents)') },
          `Σ ${trans.__('%1 tok', formatTokens(subtree.total_tokens))} · ${formatCost(subtree.cost)}`
        ),
        h('span', { className: 'jp-PrimeSession-id', title: trans.__('session id') }, s.id),
        s.kernel_id
          ? h('span', { className: 'jp-PrimeSession-id', title: trans.__('kernel id') }, trans.__('kernel %1', s.kernel_id.slice(0, 8)))
          : null,
        s.parent_id
          ? h('a', { className: 'jp-PrimeSession-link', href: '#', 'data-open': s.parent_id }, trans.__('parent %1', s.parent_id))
          : null
      )
    ];
    if (s.budget && Object.keys(s.budget).length) {
      children.push(h('div', { className: 'jp-PrimeSession-budget' }, trans.__('Budget: %1', formatBudget(s.budget, trans))));
    }
    if (s.error) {
      children.push(h('div', { className: 'jp-PrimeSession-error' }, s.error));
    }
    if (s.answer_repr) {
      children.push(
        h('div', { className: 'jp-PrimeSession-answer' }, h('strong', {}, trans.__('Answer: ')), h('code', {}, s.answer_repr))
      );
    }
    node.replaceChildren(...children.filter((c): c is Node => c !== null));
  }

  private _options: ISessionViewOptions;
  private _trans: TranslationBundle;
  private _context: IRenderContext;
  private _header: Widget;
  private _control: GoalSection;
  private _verify: VerifySection;
  private _trajectory: Panel;
  /** The reply being written, the trajectory's last item (hidden when there is none). */
  private _live: LiveReplyView;
  private _status: HTMLDivElement;
  /** Whether the status line shows that the session could not be loaded. */
  private _loadError = false;
  private _input: HTMLTextAreaElement;
  private _send: HTMLButtonElement;
  private _ticker: ReturnType<typeof setInterval> | null = null;

  private readonly _tracebacks = new TracebackFolder();
}
