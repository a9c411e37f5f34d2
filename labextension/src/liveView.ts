/**
 * The reply a session's model is writing, as the last item of the session view's trajectory:
 * drawn like the `assistant` event that will replace it, its text plain (a partial reply is
 * rarely valid Markdown) and growing in place, "writing…" until its last delta.
 */
import type { TranslationBundle } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';

import { h } from './dom';
import type { ILiveCall } from './tokens';

export class LiveReplyView extends Widget {
  constructor(trans: TranslationBundle) {
    // Not a `.jp-PrimeEvent`: it is no event of the trajectory (yet).
    super({ node: h('div', { className: 'jp-PrimeSession-live' }) });
    this._trans = trans;
    this._label = h('span', { className: 'jp-PrimeSession-writing' });
    this._text = document.createTextNode('');
    this.node.append(
      h('div', { className: 'jp-PrimeEvent-head' }, h('strong', {}, trans.__('Model')), this._label),
      h('pre', { className: 'jp-PrimeSession-liveText' }, this._text)
    );
    this.hide();
  }

  /** Show `call` (hidden when null). Text that only grew is appended: no redraw of the rest. */
  render(call: ILiveCall | null): void {
    if (!call) {
      if (!this.isHidden) {
        this.hide();
        this._text.data = '';
      }
      return;
    }
    const shown = this._text.data;
    if (call.text.length > shown.length && call.text.startsWith(shown)) {
      this._text.appendData(call.text.slice(shown.length));
    } else if (call.text !== shown) {
      this._text.data = call.text;
    }
    this._label.textContent = call.done ? '' : this._trans.__('writing…');
    this.node.setAttribute('aria-busy', String(!call.done));
    this.node.dataset.call = String(call.call);
    this.show();
  }

  private _trans: TranslationBundle;
  private _label: HTMLSpanElement;
  private _text: Text;
}
