/**
 * The "New agent" form: prompt, model (any litellm name; the known ones suggested), optional
 * name and budget (tokens, dollars, wall-clock time and model calls over the agent's subtree);
 * Autonomous, with an optional gate (a shell command) and the limits of each continuation
 * (blank: the daemon's defaults). Its fields wrap to fit the side bar; its defaults come from the settings.
 */
import type { TranslationBundle } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';

import { IAutonomousInput, parseAutonomous, parseBudget } from './budget';
import { h } from './dom';
import type { CreateSession, Session } from './protocol';
import type { IBudgetInput, IPrimeSessions, IPrimeSettings } from './tokens';

export interface INewAgentFormOptions {
  sessions: IPrimeSessions;
  settings: IPrimeSettings;
  trans: TranslationBundle;
  onStarted: (s: Session) => void;
  onClose: () => void;
}

let formCount = 0;

/** A one-line text input. */
function textInput(label: string, placeholder: string, attrs: Record<string, string> = {}): HTMLInputElement {
  return h('input', { className: 'jp-mod-styled', type: 'text', placeholder, 'aria-label': label, ...attrs });
}

/** A control with its label above it. */
function field(label: string, control: HTMLElement, className = ''): HTMLLabelElement {
  return h('label', { className: `jp-PrimeAgents-field ${className}`.trim() }, h('span', {}, label), control);
}

export class NewAgentForm extends Widget {
  constructor(private readonly options: INewAgentFormOptions) {
    super();
    const { trans } = options;
    this.addClass('jp-PrimeAgents-form');
    this._prompt = h('textarea', {
      className: 'jp-PrimeAgents-prompt jp-mod-styled',
      placeholder: trans.__('What should the agent do?'),
      rows: 4,
      'aria-label': trans.__('Agent task')
    });
    const listId = `jp-PrimeAgents-models-${++formCount}`;
    this._models = h('datalist', { id: listId });
    this._model = textInput(trans.__('Model'), trans.__('server default'), { list: listId, spellcheck: 'false' });
    this._name = textInput(trans.__('Name'), trans.__('optional'));
    this._tokens = textInput(trans.__('Token budget'), trans.__('e.g. 200k'));
    this._dollars = textInput(trans.__('Dollar budget'), trans.__('e.g. 0.50'));
    this._seconds = textInput(trans.__('Time limit'), trans.__('e.g. 10m'));
    this._turns = textInput(trans.__('Turn budget'), trans.__('e.g. 30'));
    this._autonomous = h('input', { type: 'checkbox', 'aria-label': trans.__('Autonomous') });
    this._gate = textInput(trans.__('Gate command'), trans.__('optional, e.g. pytest -q'), { spellcheck: 'false' });
    this._continuations = textInput(trans.__('Max continuations'), trans.__('default 3'));
    this._autoTurns = textInput(trans.__('Turns per continuation'), trans.__('default 12'));
    this._autoTokens = textInput(trans.__('Tokens per continuation'), trans.__('default 80k'));
    this._autoSeconds = textInput(trans.__('Time per continuation'), trans.__('default 30m'));
    this._autoFields = h(
      'div',
      { className: 'jp-PrimeAgents-fields jp-PrimeAgents-autonomousFields' },
      field(trans.__('Gate (exit 0 ends the run)'), this._gate, 'jp-mod-wide'),
      field(trans.__('Continuations'), this._continuations),
      field(trans.__('Turns each'), this._autoTurns),
      field(trans.__('Tokens each'), this._autoTokens),
      field(trans.__('Time each'), this._autoSeconds)
    );
    this._autonomous.addEventListener('change', () => this._showAutonomous());
    this._showAutonomous();
    this._error = h('div', { className: 'jp-PrimeAgents-formError', role: 'alert' });
    this._start = h(
      'button',
      { className: 'jp-mod-styled jp-mod-accept', type: 'submit', title: trans.__('Start (Ctrl/Cmd+Enter)') },
      trans.__('Start')
    );
    this._prompt.addEventListener('keydown', ev => this._onPromptKey(ev));
    this.node.append(this._createForm());
    this._applyDefaults();
    options.settings.changed.connect(this._applyDefaults, this);
  }

  /** Load the model list (once) and focus the prompt. */
  async activateForm(): Promise<void> {
    if (document.activeElement === document.body || !this.node.contains(document.activeElement)) {
      this._prompt.focus();
    }
    if (this._modelsLoaded) {
      return;
    }
    try {
      const m = await this.options.sessions.models();
      this._modelsLoaded = true;
      this._model.placeholder = this.options.trans.__('default: %1', m.default);
      this._model.title = this._model.placeholder;
      this._models.replaceChildren(...m.models.map(name => h('option', { value: name })));
    } catch {
      // The server may still be starting: keep the placeholder and try again shortly.
      setTimeout(() => {
        if (this.isVisible && !this.isDisposed) {
          void this.activateForm();
        }
      }, 3000);
    }
  }

  async submit(): Promise<void> {
    if (this._busy) {
      return;
    }
    const { trans } = this.options;
    const prompt = this._prompt.value.trim();
    if (!prompt) {
      this._showError(trans.__('Type a task for the agent first.'));
      this._prompt.focus();
      return;
    }
    const body: CreateSession = { prompt };
    try {
      const budget = parseBudget(this._budgetInput(), trans);
      if (budget) {
        body.budget = budget;
      }
    } catch (err) {
      this._showError((err as Error).message);
      return;
    }
    if (this._autonomous.checked) {
      try {
        body.autonomous = parseAutonomous(this._autonomousInput(), trans);
      } catch (err) {
        this._showError((err as Error).message);
        return;
      }
    }
    const model = this._model.value.trim();
    if (model) {
      body.model = model;
    }
    if (this._name.value.trim()) {
      body.name = this._name.value.trim();
    }
    this._busy = true;
    this._start.disabled = true;
    this._showError('');
    try {
      const session = await this.options.sessions.create(body);
      this._prompt.value = '';
      this._name.value = '';
      this.options.onStarted(session);
    } catch (err) {
      this._showError(trans.__('Could not start the agent: %1', (err as Error).message));
    } finally {
      this._busy = false;
      this._start.disabled = false;
    }
  }

  dispose(): void {
    if (!this.isDisposed) {
      this.options.settings.changed.disconnect(this._applyDefaults, this);
    }
    super.dispose();
  }

  /** The fields in their order: the prompt, model and name, the budget, then autonomy. */
  private _createForm(): HTMLFormElement {
    const { trans, onClose } = this.options;
    const close = h('button', { className: 'jp-mod-styled jp-mod-reject', type: 'button' }, trans.__('Close'));
    close.addEventListener('click', () => onClose());
    const form = h(
      'form',
      {},
      this._prompt,
      h(
        'div',
        { className: 'jp-PrimeAgents-fields' },
        field(trans.__('Model'), this._model, 'jp-mod-wide'),
        field(trans.__('Name'), this._name, 'jp-mod-wide'),
        // Limits, not settings: the agent (with its sub-agents) stops when one is spent.
        h('div', { className: 'jp-PrimeAgents-budgetHead jp-mod-wide' }, trans.__('Budget (the agent and its sub-agents stop at any)')),
        field(trans.__('Token budget'), this._tokens),
        field(trans.__('Dollar budget'), this._dollars),
        field(trans.__('Time budget'), this._seconds),
        field(trans.__('Turn budget'), this._turns)
      ),
      h(
        'label',
        {
          className: 'jp-PrimeAgents-autonomous',
          title: trans.__('Keep working until the gate passes (or it answers, without a gate) or the continuations run out')
        },
        this._autonomous,
        h('span', {}, trans.__('Autonomous'))
      ),
      this._autoFields,
      this._models,
      this._error,
      h('div', { className: 'jp-PrimeAgents-formButtons' }, close, this._start)
    );
    form.addEventListener('submit', ev => {
      ev.preventDefault();
      void this.submit();
    });
    return form;
  }

  /** Ctrl/Cmd+Enter starts the agent; Escape closes the form. */
  private _onPromptKey(ev: KeyboardEvent): void {
    if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey)) {
      ev.preventDefault();
      void this.submit();
    } else if (ev.key === 'Escape') {
      this.options.onClose();
    }
  }

  private _budgetInput(): IBudgetInput {
    return {
      tokens: this._tokens.value,
      dollars: this._dollars.value,
      seconds: this._seconds.value,
      turns: this._turns.value
    };
  }

  private _autonomousInput(): IAutonomousInput {
    return {
      gate: this._gate.value,
      maxContinuations: this._continuations.value,
      turns: this._autoTurns.value,
      tokens: this._autoTokens.value,
      seconds: this._autoSeconds.value
    };
  }

  private _showAutonomous(): void {
    this._autoFields.style.display = this._autonomous.checked ? '' : 'none';
  }

  /** Fill the model and budget fields from the settings, except where the person typed. */
  private _applyDefaults(): void {
    const { defaultModel, defaultBudget } = this.options.settings;
    const fill = (el: HTMLInputElement, value: string | undefined) => {
      if (!el.value || el.value === el.dataset.default) {
        el.value = value ?? '';
      }
      el.dataset.default = value ?? '';
    };
    fill(this._model, defaultModel);
    fill(this._tokens, defaultBudget.tokens);
    fill(this._dollars, defaultBudget.dollars);
    fill(this._seconds, defaultBudget.seconds);
    fill(this._turns, defaultBudget.turns);
  }

  private _showError(msg: string): void {
    this._error.textContent = msg; // hidden while empty
  }

  private _prompt: HTMLTextAreaElement;
  private _model: HTMLInputElement;
  private _models: HTMLDataListElement;
  private _name: HTMLInputElement;
  private _tokens: HTMLInputElement;
  private _dollars: HTMLInputElement;
  private _seconds: HTMLInputElement;
  private _turns: HTMLInputElement;
  private _autonomous: HTMLInputElement;
  private _autoFields: HTMLDivElement;
  private _gate: HTMLInputElement;
  private _continuations: HTMLInputElement;
  private _autoTurns: HTMLInputElement;
  private _autoTokens: HTMLInputElement;
  private _autoSeconds: HTMLInputElement;
  private _error: HTMLDivElement;
  private _start: HTMLButtonElement;
  private _busy = false;
  private _modelsLoaded = false;
}
