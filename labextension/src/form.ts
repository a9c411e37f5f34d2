import { Widget } from '@lumino/widgets';

import { h } from './dom';
import { INewSession, ISession, parseBudget } from './model';
import { AgentsStore } from './store';

/**
 * The "New agent" form: prompt, model, optional name and budget (tokens, dollars,
 * wall-clock time and model calls over the agent's subtree).
 */
export class NewAgentForm extends Widget {
  constructor(
    private readonly store: AgentsStore,
    private readonly onStarted: (s: ISession) => void,
    private readonly onClose: () => void
  ) {
    super();
    this.addClass('jp-PrimeAgents-form');
    this._prompt = h('textarea', {
      className: 'jp-PrimeAgents-prompt jp-mod-styled',
      placeholder: 'What should the agent do?',
      rows: 4,
      'aria-label': 'Agent task'
    });
    this._model = h('select', { className: 'jp-mod-styled', 'aria-label': 'Model' });
    this._name = h('input', {
      className: 'jp-mod-styled',
      type: 'text',
      placeholder: 'name (optional)',
      'aria-label': 'Name'
    });
    this._tokens = h('input', {
      className: 'jp-mod-styled',
      type: 'text',
      placeholder: 'max tokens, e.g. 200k',
      'aria-label': 'Token budget'
    });
    this._dollars = h('input', {
      className: 'jp-mod-styled',
      type: 'text',
      placeholder: 'max $, e.g. 0.50',
      'aria-label': 'Dollar budget'
    });
    this._seconds = h('input', {
      className: 'jp-mod-styled',
      type: 'text',
      placeholder: 'e.g. 10m',
      'aria-label': 'Time limit'
    });
    this._turns = h('input', {
      className: 'jp-mod-styled',
      type: 'text',
      placeholder: 'model calls, e.g. 30',
      'aria-label': 'Turn budget'
    });
    this._error = h('div', { className: 'jp-PrimeAgents-formError', role: 'alert' });
    this._start = h(
      'button',
      { className: 'jp-mod-styled jp-mod-accept', type: 'submit', title: 'Start (Ctrl/Cmd+Enter)' },
      'Start'
    );
    const cancel = h('button', { className: 'jp-mod-styled jp-mod-reject', type: 'button' }, 'Close');
    cancel.addEventListener('click', () => this.onClose());

    const form = h(
      'form',
      {},
      this._prompt,
      h('label', { className: 'jp-PrimeAgents-field' }, h('span', {}, 'Model'), this._model),
      h('label', { className: 'jp-PrimeAgents-field' }, h('span', {}, 'Name'), this._name),
      h(
        'div',
        { className: 'jp-PrimeAgents-budget' },
        h('label', { className: 'jp-PrimeAgents-field' }, h('span', {}, 'Tokens'), this._tokens),
        h('label', { className: 'jp-PrimeAgents-field' }, h('span', {}, 'Dollars'), this._dollars),
        h('label', { className: 'jp-PrimeAgents-field' }, h('span', {}, 'Time'), this._seconds),
        h('label', { className: 'jp-PrimeAgents-field' }, h('span', {}, 'Turns'), this._turns)
      ),
      this._error,
      h('div', { className: 'jp-PrimeAgents-formButtons' }, cancel, this._start)
    );
    form.addEventListener('submit', ev => {
      ev.preventDefault();
      void this.submit();
    });
    this._prompt.addEventListener('keydown', ev => {
      if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey)) {
        ev.preventDefault();
        void this.submit();
      } else if (ev.key === 'Escape') {
        this.onClose();
      }
    });
    this.node.append(form);
    this._setModels(null, []);
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
      const m = await this.store.models();
      this._modelsLoaded = true;
      this._setModels(m.default, m.models || []);
    } catch (err) {
      // The server may still be starting: keep the default and try again shortly.
      this._setModels(null, []);
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
    const prompt = this._prompt.value.trim();
    if (!prompt) {
      this._showError('Type a task for the agent first.');
      this._prompt.focus();
      return;
    }
    const body: INewSession = { prompt };
    try {
      const budget = parseBudget({
        tokens: this._tokens.value,
        dollars: this._dollars.value,
        seconds: this._seconds.value,
        turns: this._turns.value
      });
      if (budget) {
        body.budget = budget;
      }
    } catch (err) {
      this._showError((err as Error).message);
      return;
    }
    if (this._model.value) {
      body.model = this._model.value;
    }
    if (this._name.value.trim()) {
      body.name = this._name.value.trim();
    }
    this._busy = true;
    this._start.disabled = true;
    this._showError('');
    try {
      const session = await this.store.create(body);
      this._prompt.value = '';
      this._name.value = '';
      this.onStarted(session);
    } catch (err) {
      this._showError(`Could not start the agent: ${(err as Error).message}`);
    } finally {
      this._busy = false;
      this._start.disabled = false;
    }
  }

  private _showError(msg: string): void {
    this._error.textContent = msg;
    this._error.style.display = msg ? '' : 'none';
  }

  private _setModels(def: string | null, models: string[]): void {
    this._model.replaceChildren();
    this._model.append(h('option', { value: '' }, def ? `default (${def})` : 'server default'));
    for (const m of models) {
      this._model.append(h('option', { value: m }, m));
    }
  }

  private _prompt: HTMLTextAreaElement;
  private _model: HTMLSelectElement;
  private _name: HTMLInputElement;
  private _tokens: HTMLInputElement;
  private _dollars: HTMLInputElement;
  private _seconds: HTMLInputElement;
  private _turns: HTMLInputElement;
  private _error: HTMLDivElement;
  private _start: HTMLButtonElement;
  private _busy = false;
  private _modelsLoaded = false;
}
