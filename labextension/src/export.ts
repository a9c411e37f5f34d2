import { Dialog } from '@jupyterlab/apputils';
import { Widget } from '@lumino/widgets';

import { h } from './dom';

/** The body of the "Export as notebook" dialog for a session with sub-agents. */
export class ExportOptions extends Widget implements Dialog.IBodyWidget<{ subtree: boolean }> {
  constructor() {
    super();
    this.addClass('jp-PrimeExportOptions');
    this._subtree = h('input', { type: 'checkbox', 'aria-label': 'With sub-agents' });
    this.node.append(
      h(
        'label',
        {},
        this._subtree,
        ' With sub-agents (a folder of notebooks that link to each other)'
      ),
      h(
        'p',
        { className: 'jp-PrimeExportOptions-note' },
        'The export is written at the root of the file browser and opened.'
      )
    );
  }

  getValue(): { subtree: boolean } {
    return { subtree: this._subtree.checked };
  }

  private _subtree: HTMLInputElement;
}
