import { Dialog } from '@jupyterlab/apputils';
import { Widget } from '@lumino/widgets';

import { h } from './dom';
import { IExportChoices } from './model';

export interface IExportOptionsValue {
  subtree: boolean;
  with_context: boolean;
}

/**
 * The body of the "Export as notebook" dialog, for a session with sub-agents and/or a
 * context input: a checkbox for each option it offers.
 */
export class ExportOptions extends Widget implements Dialog.IBodyWidget<IExportOptionsValue> {
  constructor(choices: IExportChoices) {
    super();
    this.addClass('jp-PrimeExportOptions');
    this._subtree = h('input', { type: 'checkbox', 'aria-label': 'With sub-agents' });
    this._context = h('input', { type: 'checkbox', 'aria-label': 'With context' });
    this.node.append(
      ...[
        choices.subtree
          ? h('label', {}, this._subtree, ' With sub-agents (a folder of notebooks that link to each other)')
          : null,
        choices.withContext
          ? h('label', {}, this._context, ' With context (the agent’s input, written beside the notebook and loaded by a cell)')
          : null,
        h(
          'p',
          { className: 'jp-PrimeExportOptions-note' },
          'The export is written at the root of the file browser and opened.'
        )
      ].filter((n): n is NonNullable<typeof n> => n !== null)
    );
  }

  getValue(): IExportOptionsValue {
    return { subtree: this._subtree.checked, with_context: this._context.checked };
  }

  private _subtree: HTMLInputElement;
  private _context: HTMLInputElement;
}
