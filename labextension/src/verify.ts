/**
 * Verifying a session's answer from its view: whether the view offers it, what it says of a
 * verification, and the section under the session's header with ✓ Right and ✗ Wrong. A verdict teaches the harness: a right answer becomes a
 * worked example for similar tasks, a wrong one a caution, through the review policy
 * (docs/learning.md).
 */
import type { TranslationBundle } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';

import { h } from './dom';
import type { Session, Verification } from './protocol';
import type { IRefineProgress } from './tokens';
import type { SessionModel } from './sessionModel';

/** Whether a person can mark this session's answer right or wrong now. */
export function canVerify(s: Session | undefined): boolean {
  return !!s && s.kind === 'agent' && s.has_answer && (s.state === 'DONE' || s.state === 'IDLE');
}

/** "Verified right by you · learned example/x (applied, proposal r1)" — what a verdict did. */
export function verificationText(v: Verification, trans: TranslationBundle): string {
  const who = v.by === 'user' ? trans.__('you') : v.by;
  const head = v.correct ? trans.__('Verified right by %1', who) : trans.__('Verified wrong by %1', who);
  if (v.learned) {
    const waits = v.learned.status === 'pending';
    return (
      `${head} · ` +
      (waits
        ? trans.__('learned %1, waiting for review (proposal %2)', v.learned.entry ?? '', v.learned.refinement_id)
        : trans.__('learned %1 (%2, proposal %3)', v.learned.entry ?? '', v.learned.status, v.learned.refinement_id))
    );
  }
  return v.refused ? `${head} · ${trans.__('nothing learned: %1', v.refused)}` : head;
}

export function refineProgressText(p: IRefineProgress | undefined, elapsed: number, trans: TranslationBundle): string {
  const seconds = Math.round(p ? Math.max(p.seconds, elapsed) : elapsed);
  if (!p) {
    return trans.__('Refining the harness (one model call)… %1 s', seconds);
  }
  return p.phase === 'writing'
    ? trans.__('Refining with %1: %2 characters of reply, %3 s', p.model, p.chars, seconds)
    : trans.__('Refining with %1: reading the evidence, %2 s', p.model, seconds);
}

export interface IVerifySectionOptions {
  model: SessionModel;
  trans: TranslationBundle;
  /** Show the outcome of an action (an error in red). */
  report: (text: string, error?: boolean) => void;
  /** Ask what is wrong with a wrong answer: the note, '' for none, null to give up. */
  askNote: () => Promise<string | null>;
}

/**
 * Under the session's header, once it has an answer: "Is the answer right?" with ✓ Right and
 * ✗ Wrong (a wrong one asks what is wrong, kept as the caution's note), then what the verdict
 * taught. A later verdict that differs replaces the first and takes back what it taught.
 */
export class VerifySection extends Widget {
  constructor(private readonly options: IVerifySectionOptions) {
    super({ node: h('div', { className: 'jp-PrimeSession-verify' }) });
    const { trans } = options;
    this._text = h('span', { className: 'jp-PrimeSession-verifyText' });
    this._right = this._button('right', trans.__('✓ Right'), trans.__('Right: the harness learns it as a worked example for similar tasks'));
    this._wrong = this._button('wrong', trans.__('✗ Wrong'), trans.__('Wrong: the harness keeps it as a caution for similar tasks'));
    this.node.append(this._text, this._right, this._wrong);
    this.render();
  }

  /** Draw what the session's record says (hidden while there is no answer to verify). */
  render(): void {
    const s = this.options.model.session;
    const shown = canVerify(s);
    this.node.style.display = shown ? '' : 'none';
    if (!shown || !s) {
      return;
    }
    const v = s.verified;
    this._text.textContent = v ? verificationText(v, this.options.trans) : this.options.trans.__('Is the answer right?');
    this._right.classList.toggle('jp-mod-active', !!v && v.correct);
    this._wrong.classList.toggle('jp-mod-active', !!v && !v.correct);
  }

  /** Mark the answer right or wrong and report what the harness learned. */
  async verify(correct: boolean): Promise<void> {
    const { model, trans, report } = this.options;
    let note = '';
    if (!correct) {
      const asked = await this.options.askNote();
      if (asked === null) {
        return;
      }
      note = asked.trim();
    }
    this._right.disabled = this._wrong.disabled = true;
    try {
      report(verificationText(await model.verify(correct, note), trans));
    } catch (err) {
      report(trans.__('Could not verify the answer: %1', (err as Error).message), true);
    } finally {
      this._right.disabled = this._wrong.disabled = false;
      this.render();
    }
  }

  private _button(which: 'right' | 'wrong', label: string, title: string): HTMLButtonElement {
    const b = h('button', { type: 'button', className: 'jp-mod-styled jp-PrimeSession-verdict', 'data-verify': which, title }, label);
    b.addEventListener('click', () => void this.verify(which === 'right'));
    return b;
  }

  private _text: HTMLSpanElement;
  private _right: HTMLButtonElement;
  private _wrong: HTMLButtonElement;
}
