import { Dialog } from '@jupyterlab/apputils';
import type { TranslationBundle } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';

import { h } from './dom';
import { IExportChoices } from './exportNaming';

export interface IExportOptionsValue {
  subtree: boolean;
  with_context: boolean;
}

/**
 * The body of the "Export as notebook" dialog, for a session with sub-agents and/or a
 * context input: a checkbox for each option it offers.
 */
export class ExportOptions extends Widget implements Dialog.IBodyWidget<IExportOptionsValue> {
  constructor(choices: IExportChoices, trans: TranslationBundle) {
    super();
    this.addClass('jp-PrimeExportOptions');
    this._subtree = h('input', { type: 'checkbox', 'aria-label': trans.__('With sub-agents') });
    this._context = h('input', { type: 'checkbox', 'aria-label': trans.__('With context') });
    this.node.append(
      ...[
        choices.subtree
          ? h('label', {}, this._subtree, ' ', trans.__('With sub-agents (a folder of notebooks that link to each other)'))
          : null,
        choices.withContext
          ? h('label', {}, this._context, ' ', trans.__('With context (the agent’s input, written beside the notebook and loaded by a cell)'))
          : null,
        h('p', { className: 'jp-PrimeExportOptions-note' }, trans.__('The export is written at the root of the file browser and opened.'))
      ].filter((n): n is NonNullable<typeof n> => n !== null)
    );
  }

  getValue(): IExportOptionsValue {
    return { subtree: this._subtree.checked, with_context: this._context.checked };
  }

  private _subtree: HTMLInputElement;
  private _context: HTMLInputElement;
}
