/**
 * @jest-environment jsdom
 */
import { untranslated } from '../src/i18n';
import { GAP } from '../src/liveReply';
import { LiveReplyView } from '../src/liveView';

describe("LiveReplyView: the session view's reply being written", () => {
  const text = (view: LiveReplyView) => view.node.querySelector('.jp-PrimeSession-liveText')!.textContent;
  const label = (view: LiveReplyView) => view.node.querySelector('.jp-PrimeSession-writing')!.textContent;

  it('is hidden until a call streams, then grows in place, "writing…" until its last delta', () => {
    const view = new LiveReplyView(untranslated);
    expect(view.isHidden).toBe(true);
    view.render({ call: 1, text: 'Let me', done: false });
    expect(view.isHidden).toBe(false);
    const node = view.node.querySelector('.jp-PrimeSession-liveText')!.firstChild;
    expect([text(view), label(view), view.node.getAttribute('aria-busy')]).toEqual(['Let me', 'writing…', 'true']);
    view.render({ call: 1, text: 'Let me compute', done: false });
    expect(text(view)).toBe('Let me compute');
    // Appended to the same text node, not redrawn.
    expect(view.node.querySelector('.jp-PrimeSession-liveText')!.firstChild).toBe(node);
    view.render({ call: 1, text: 'Let me compute it.', done: true });
    expect([text(view), label(view), view.node.getAttribute('aria-busy')]).toEqual(['Let me compute it.', '', 'false']);
    view.dispose();
  });

  it('shows a text that changed otherwise (a hole filled, the next call) whole, as plain text', () => {
    const view = new LiveReplyView(untranslated);
    view.render({ call: 1, text: `a${GAP}c`, done: false });
    view.render({ call: 1, text: 'abc', done: false });
    expect(text(view)).toBe('abc');
    view.render({ call: 2, text: '<b>**not markup**</b>', done: false });
    expect(text(view)).toBe('<b>**not markup**</b>');
    expect(view.node.querySelector('b')).toBeNull();
    expect(view.node.dataset.call).toBe('2');
    view.dispose();
  });

  it('hides and forgets the text when the call goes (its stored events replace it)', () => {
    const view = new LiveReplyView(untranslated);
    view.render({ call: 1, text: 'x', done: true });
    view.render(null);
    expect(view.isHidden).toBe(true);
    expect(text(view)).toBe('');
    view.dispose();
  });
});
