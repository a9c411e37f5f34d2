import { Dialog } from '@jupyterlab/apputils';
import type { TranslationBundle } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';

import { h } from './dom';
import { IExportChoices } from './exportNaming';

export interface IExportOptionsValue {
  /** Where to write it, relative to the server root. */
  path: string;
  subtree: boolean;
  with_context: boolean;
  /** Open the notebook afterwards (which starts its kernel). */
  open: boolean;
}

/**
 * The body of the "Export as notebook" dialog: the path to write (prefilled with a free name
 * after the session), a checkbox for each option the session offers, and whether to open the
 * notebook after — off, since opening a notebook starts its kernel.
 */
export class ExportOptions extends Widget implements Dialog.IBodyWidget<IExportOptionsValue> {
  /** `suggest(subtree)`: the default path for a notebook (false) or a folder (true). */
  constructor(choices: IExportChoices, suggest: (subtree: boolean) => string, trans: TranslationBundle) {
    super();
    this.addClass('jp-PrimeExportOptions');
    this._suggest = suggest;
    this._path = h('input', {
      className: 'jp-mod-styled jp-PrimeExportOptions-path',
      type: 'text',
      value: suggest(false),
      'aria-label': trans.__('Path'),
      spellcheck: false
    });
    this._path.addEventListener('input', () => (this._edited = true));
    this._subtree = h('input', { type: 'checkbox', 'aria-label': trans.__('With sub-agents') });
    // The default name follows the choice (a notebook, or a folder of them) until edited.
    this._subtree.addEventListener('change', () => {
      if (!this._edited) {
        this._path.value = this._suggest(this._subtree.checked);
      }
    });
    this._context = h('input', { type: 'checkbox', 'aria-label': trans.__('With context') });
    this._open = h('input', { type: 'checkbox', 'aria-label': trans.__('Open it') });
    this.node.append(
      ...[
        h('label', { className: 'jp-PrimeExportOptions-pathLabel' }, trans.__('Path (from the server root)'), this._path),
        choices.subtree
          ? h('label', {}, this._subtree, ' ', trans.__('With sub-agents (a folder of notebooks that link to each other)'))
          : null,
        choices.withContext
          ? h('label', {}, this._context, ' ', trans.__('With context (the agent’s input, written beside the notebook and loaded by a cell)'))
          : null,
        h('label', {}, this._open, ' ', trans.__('Open it (starts the notebook’s kernel)'))
      ].filter((n): n is NonNullable<typeof n> => n !== null)
    );
  }

  getValue(): IExportOptionsValue {
    return {
      path: this._path.value.trim(),
      subtree: this._subtree.checked,
      with_context: this._context.checked,
      open: this._open.checked
    };
  }

  private _suggest: (subtree: boolean) => string;
  private _edited = false;
  private _path: HTMLInputElement;
  private _subtree: HTMLInputElement;
  private _context: HTMLInputElement;
  private _open: HTMLInputElement;
}
