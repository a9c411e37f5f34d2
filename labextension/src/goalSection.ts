/**
 * The top of a session's view below its header: the session's goal (text, status, who set it,
 * its progress notes, the summary once done) with Set/Change and Clear for the user, whether
 * it runs autonomously, and its schedules (when, the next tick, how many ticks were delivered,
 * missed and skipped) with Cancel, and Add schedule (every / at / cron and a message) while the
 * session is open. It renders what its `SessionModel` holds and asks the model
 * to act; the view reports the outcome of an action in its status line.
 */
import type { TranslationBundle } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';

import { h } from './dom';
import { clockTime, firstLine } from './format';
import { author, autonomy, autonomyText, nextTick, ScheduleKind, scheduleRequest, scheduleTiming, tickCounts } from './longrun';
import type { Goal, Schedule } from './protocol';
import type { SessionModel } from './sessionModel';
import { isTerminal } from './states';

export interface IGoalSectionOptions {
  model: SessionModel;
  trans: TranslationBundle;
  openSession: (id: string) => void;
  /** Show the outcome of an action (an error in red). */
  report: (text: string, error?: boolean) => void;
}

/** A schedule's row and the parts of it that change. */
interface IScheduleRow {
  node: HTMLDivElement;
  next: HTMLSpanElement;
  state: HTMLSpanElement;
  counts: HTMLSpanElement;
  cancel: HTMLButtonElement;
}

/** Ended schedules listed under the active ones (the newest; the rest are counted). */
const ENDED_SHOWN = 5;

export class GoalSection extends Widget {
  constructor(options: IGoalSectionOptions) {
    super({ node: h('div', { className: 'jp-PrimeSession-control' }) });
    const { trans } = options;
    this._options = options;
    this._trans = trans;
    this._goal = h('div', { className: 'jp-PrimeSession-goal' });
    this._input = h('textarea', {
      className: 'jp-mod-styled jp-PrimeSession-goalInput',
      rows: 2,
      placeholder: trans.__('What should this agent work towards? (Enter to save, Shift+Enter for a new line)'),
      'aria-label': trans.__('Goal')
    });
    this._save = h('button', { className: 'jp-mod-styled jp-mod-accept', type: 'button' }, trans.__('Save goal'));
    const cancel = h('button', { className: 'jp-mod-styled jp-mod-reject', type: 'button' }, trans.__('Cancel'));
    this._editor = h('div', { className: 'jp-PrimeSession-goalEditor' }, this._input, this._save, cancel);
    this._editor.style.display = 'none';
    this._autonomyText = h('span');
    this._autonomy = h(
      'div',
      { className: 'jp-PrimeSession-autonomy' },
      h('span', { className: 'jp-PrimeSession-controlLabel' }, trans.__('Autonomous')),
      ' ',
      this._autonomyText
    );
    this._count = h('span', { className: 'jp-PrimeSession-scheduleCount' });
    this._heading = h('div', { className: 'jp-PrimeSession-controlLabel' }, trans.__('Schedules'), ' ', this._count);
    this._more = h('div', { className: 'jp-PrimeEvent-note' });
    this._schedules = h('div', { className: 'jp-PrimeSession-schedules' });
    this._adder = this._scheduleAdder();
    this.node.append(this._goal, this._editor, this._autonomy, this._schedules, this._adder);

    this._save.addEventListener('click', () => void this._saveGoal());
    cancel.addEventListener('click', () => this._edit(false));
    this._input.addEventListener('keydown', ev => {
      if (ev.key === 'Enter' && !ev.shiftKey) {
        ev.preventDefault();
        void this._saveGoal();
      } else if (ev.key === 'Escape') {
        ev.preventDefault();
        this._edit(false);
      }
    });
    this.node.addEventListener('click', ev => this._onClick(ev));
  }

  /** Draw what the model holds. */
  render(): void {
    const s = this._options.model.session;
    const schedules = this._options.model.schedules;
    const open = !!s && !isTerminal(s.state);
    if (!open && this._editing) {
      this._edit(false);
    }
    // The goal is drawn again only when it changed: a button replaced between a press and its
    // release loses the click, and the record changes at every turn.
    const goalKey = JSON.stringify([s?.id, open, s?.goal]);
    if (goalKey !== this._goalKey) {
      this._goalKey = goalKey;
      this._goal.replaceChildren(...(s ? this._goalParts(s.goal, open, s.id) : []));
    }
    const auto = s ? autonomy(s) : null;
    const autoText = auto ? autonomyText(auto, this._trans) : '';
    if (this._autonomyText.textContent !== autoText) {
      this._autonomyText.textContent = autoText;
    }
    this._autonomy.style.display = auto ? '' : 'none';
    this._renderSchedules(s?.id ?? '', schedules);
    if (!open && this._adding) {
      this._add(false);
    }
    this._adder.style.display = open ? '' : 'none';
    this.node.style.display = this._goal.childElementCount || auto || schedules.length || this._editing ? '' : 'none';
  }

  /** The next ticks' countdowns, once a second (only their text changes). */
  tick(now = Date.now()): void {
    for (const [schedule, node] of this._countdowns) {
      node.textContent = nextTick(schedule, now, this._trans) ?? '';
    }
  }

  private _goalParts(goal: Goal | undefined, open: boolean, id: string): HTMLElement[] {
    const trans = this._trans;
    const action = (name: string, label: string, title: string) =>
      h('button', { className: 'jp-mod-styled jp-PrimeSession-controlButton', type: 'button', 'data-action': name, title }, label);
    if (!goal) {
      return open
        ? [
            h(
              'div',
              { className: 'jp-PrimeSession-goalHead jp-mod-none' },
              h('span', { className: 'jp-PrimeSession-controlLabel' }, trans.__('No goal')),
              action('set-goal', trans.__('Set goal…'), trans.__('Give this agent a goal: it sees it on every turn'))
            )
          ]
        : [];
    }
    const done = goal.status === 'done';
    const by = author(goal.set_by, id, trans, this._options.model.session?.kind);
    const head = h(
      'div',
      { className: 'jp-PrimeSession-goalHead', 'data-status': goal.status },
      h('span', { className: `jp-PrimeSession-goalStatus jp-mod-${goal.status}` }, done ? trans.__('Goal done') : trans.__('Goal')),
      h('span', { className: 'jp-PrimeSession-goalText' }, goal.text),
      h('span', { className: 'jp-PrimeSession-goalBy', title: trans.__('set at %1', clockTime(goal.set_at)) }, trans.__('set by %1', by)),
      open ? action('change-goal', trans.__('Change…'), trans.__('Give this agent a new goal')) : null,
      open ? action('clear-goal', trans.__('Clear'), trans.__('Remove the goal')) : null
    );
    const parts: HTMLElement[] = [head];
    const progress = goal.progress ?? [];
    if (progress.length) {
      parts.push(
        h(
          'ol',
          { className: 'jp-PrimeSession-goalProgress', 'aria-label': trans.__('Progress notes') },
          ...progress.map(p =>
            h(
              'li',
              { title: trans.__('by %1', author(p.by, id, trans, this._options.model.session?.kind)) },
              h('span', { className: 'jp-PrimeSession-goalTime' }, clockTime(p.ts)),
              ' ',
              p.note
            )
          )
        )
      );
    }
    if (done && goal.summary) {
      parts.push(
        h('div', { className: 'jp-PrimeSession-goalSummary' }, h('span', { className: 'jp-PrimeSession-controlLabel' }, trans.__('Summary')), ' ', goal.summary)
      );
    }
    return parts;
  }

  private _renderSchedules(id: string, schedules: readonly Schedule[]): void {
    const trans = this._trans;
    const active = schedules.filter(s => s.state === 'active');
    const ended = schedules.filter(s => s.state !== 'active');
    const shown = [...active, ...ended.slice(0, ENDED_SHOWN)];
    const now = Date.now();
    const kept = new Map<string, IScheduleRow>();
    this._countdowns.clear();
    for (const s of shown) {
      const row = this._rows.get(s.id) ?? this._scheduleRow(s, id);
      kept.set(s.id, row);
      const live = s.state === 'active';
      row.node.dataset.state = s.state;
      row.node.title = `${s.id} · ${trans.__('made by %1', author(s.owner, id, trans, this._options.model.session?.kind))}${s.reason ? `\n${s.reason}` : ''}`;
      row.next.textContent = nextTick(s, now, trans) ?? '';
      row.next.style.display = live ? '' : 'none';
      row.state.textContent = s.state;
      row.state.style.display = live ? 'none' : '';
      row.counts.textContent = tickCounts(s, trans);
      row.cancel.style.display = live ? '' : 'none';
      if (live) {
        this._countdowns.set(s, row.next);
      }
    }
    this._rows = kept;
    this._count.textContent = trans.__('%1 active', active.length);
    const more = ended.length - ENDED_SHOWN;
    this._more.textContent = more > 0 ? trans._n('and %1 more ended', 'and %1 more ended', more) : '';
    this._more.style.display = more > 0 ? '' : 'none';
    // Rows are updated in place and moved only when the order changed: a button replaced (or
    // moved) between a press and its release loses the click, and ticks change rows often.
    const nodes = [this._heading, ...[...kept.values()].map(r => r.node), this._more];
    if (nodes.some((n, i) => this._schedules.children[i] !== n) || this._schedules.children.length !== nodes.length) {
      this._schedules.replaceChildren(...nodes);
    }
    this._schedules.style.display = shown.length ? '' : 'none';
  }

  /** A schedule's row: what never changes is drawn once, the rest by `_renderSchedules`. */
  private _scheduleRow(s: Schedule, id: string): IScheduleRow {
    const trans = this._trans;
    const next = h('span', { className: 'jp-PrimeSession-scheduleNext', title: trans.__('next tick') });
    const state = h('span', { className: 'jp-PrimeSession-scheduleState' });
    const counts = h('span', { className: 'jp-PrimeSession-scheduleCounts' });
    const cancel = h(
      'button',
      {
        className: 'jp-mod-styled jp-PrimeSession-controlButton',
        type: 'button',
        'data-action': 'cancel-schedule',
        'data-schedule': s.id,
        title: trans.__('Cancel this schedule: no more ticks')
      },
      trans.__('Cancel')
    );
    const target =
      s.target_id === id
        ? null
        : h('a', { className: 'jp-PrimeSession-link', href: '#', 'data-open': s.target_id, title: trans.__('Open %1', s.target_id) }, `→ ${s.target_id}`);
    const node = h(
      'div',
      { className: 'jp-PrimeSession-schedule', 'data-schedule-id': s.id },
      h('span', { className: 'jp-PrimeSession-scheduleTiming' }, scheduleTiming(s, trans)),
      h('span', { className: 'jp-PrimeSession-scheduleMessage', title: s.message }, `“${firstLine(s.message, 60)}”`),
      target,
      next,
      state,
      counts,
      cancel
    );
    return { node, next, state, counts, cancel };
  }

  /** Add schedule…, and its editor: how it repeats, when, and the message each tick delivers. */
  private _scheduleAdder(): HTMLDivElement {
    const trans = this._trans;
    this._kind = h(
      'select',
      { className: 'jp-mod-styled', 'aria-label': trans.__('Repeat') },
      h('option', { value: 'every' }, trans.__('every')),
      h('option', { value: 'at' }, trans.__('at')),
      h('option', { value: 'cron' }, trans.__('cron'))
    );
    this._when = h('input', { className: 'jp-mod-styled jp-PrimeSession-scheduleWhen', type: 'text', 'aria-label': trans.__('When') });
    this._message = h('input', {
      className: 'jp-mod-styled jp-PrimeSession-scheduleInput',
      type: 'text',
      placeholder: trans.__('message each tick delivers'),
      'aria-label': trans.__('Schedule message')
    });
    this._addSave = h('button', { className: 'jp-mod-styled jp-mod-accept', type: 'button' }, trans.__('Add'));
    const cancel = h('button', { className: 'jp-mod-styled jp-mod-reject', type: 'button' }, trans.__('Cancel'));
    this._addEditor = h('div', { className: 'jp-PrimeSession-scheduleEditor' }, this._kind, this._when, this._message, this._addSave, cancel);
    this._addEditor.style.display = 'none';
    this._addOpen = h(
      'button',
      {
        className: 'jp-mod-styled jp-PrimeSession-controlButton',
        type: 'button',
        title: trans.__('Send this agent a message on a timer or a cron schedule')
      },
      trans.__('Add schedule…')
    );
    this._kind.addEventListener('change', () => this._placeholder());
    this._placeholder();
    this._addOpen.addEventListener('click', () => this._add(true));
    this._addSave.addEventListener('click', () => void this._saveSchedule());
    cancel.addEventListener('click', () => this._add(false));
    for (const input of [this._when, this._message]) {
      input.addEventListener('keydown', ev => {
        if (ev.key === 'Enter') {
          ev.preventDefault();
          void this._saveSchedule();
        } else if (ev.key === 'Escape') {
          ev.preventDefault();
          this._add(false);
        }
      });
    }
    return h('div', { className: 'jp-PrimeSession-scheduleAdd' }, this._addOpen, this._addEditor);
  }

  /** The example in the When field for the kind chosen. */
  private _placeholder(): void {
    const trans = this._trans;
    const examples: Record<ScheduleKind, string> = {
      every: trans.__('e.g. 10m'),
      at: trans.__('e.g. in 30m'),
      cron: trans.__('e.g. */5 * * * *')
    };
    this._when.placeholder = examples[this._kind.value as ScheduleKind];
  }

  private _add(adding: boolean): void {
    this._adding = adding;
    this._addEditor.style.display = adding ? '' : 'none';
    this._addOpen.style.display = adding ? 'none' : '';
    if (adding) {
      this._when.focus();
    }
  }

  private async _saveSchedule(): Promise<void> {
    const trans = this._trans;
    let body;
    try {
      body = scheduleRequest(this._kind.value as ScheduleKind, this._when.value, this._message.value, trans);
    } catch (err) {
      this._options.report((err as Error).message, true);
      return;
    }
    this._addSave.disabled = true;
    try {
      await this._options.model.addSchedule(body);
      this._when.value = '';
      this._message.value = '';
      this._add(false);
      this._options.report(trans.__('Schedule added.'));
    } catch (err) {
      // The editor keeps what was typed (e.g. a cron expression the daemon cannot parse).
      this._options.report(trans.__('Could not add the schedule: %1', (err as Error).message), true);
    } finally {
      this._addSave.disabled = false;
    }
  }

  private _onClick(ev: MouseEvent): void {
    const target = ev.target as HTMLElement;
    const link = target.closest('[data-open]') as HTMLElement | null;
    if (link) {
      ev.preventDefault();
      this._options.openSession(link.dataset.open!);
      return;
    }
    const button = target.closest('[data-action]') as HTMLButtonElement | null;
    switch (button?.dataset.action) {
      case 'set-goal':
        this._edit(true, '');
        break;
      case 'change-goal':
        this._edit(true, this._options.model.session?.goal?.text ?? '');
        break;
      case 'clear-goal':
        void this._act(button, () => this._options.model.clearGoal(), this._trans.__('Goal cleared.'), m =>
          this._trans.__('Could not clear the goal: %1', m)
        );
        break;
      case 'cancel-schedule':
        void this._act(
          button,
          () => this._options.model.cancelSchedule(button.dataset.schedule!),
          this._trans.__('Schedule cancelled.'),
          m => this._trans.__('Could not cancel the schedule: %1', m)
        );
        break;
    }
  }

  /** Run an action of the model with its button disabled, and report how it went. */
  private async _act(
    button: HTMLButtonElement,
    act: () => Promise<void>,
    ok: string,
    failed: (message: string) => string
  ): Promise<void> {
    button.disabled = true;
    try {
      await act();
      this._options.report(ok);
    } catch (err) {
      this._options.report(failed((err as Error).message), true);
    } finally {
      button.disabled = false;
    }
  }

  private _edit(editing: boolean, text = ''): void {
    this._editing = editing;
    this._editor.style.display = editing ? '' : 'none';
    if (editing) {
      this.node.style.display = '';
      this._input.value = text;
      this._input.focus();
    }
  }

  private async _saveGoal(): Promise<void> {
    const text = this._input.value.trim();
    if (!text) {
      return;
    }
    this._save.disabled = true;
    try {
      await this._options.model.setGoal(text);
      this._edit(false);
      this._options.report(this._trans.__('Goal set.'));
    } catch (err) {
      // The editor keeps the text (e.g. a goal too long for the daemon).
      this._options.report(this._trans.__('Could not set the goal: %1', (err as Error).message), true);
    } finally {
      this._save.disabled = false;
    }
  }

  private _options: IGoalSectionOptions;
  private _trans: TranslationBundle;
  private _goal: HTMLDivElement;
  private _editor: HTMLDivElement;
  private _input: HTMLTextAreaElement;
  private _save: HTMLButtonElement;
  private _autonomy: HTMLDivElement;
  private _autonomyText: HTMLSpanElement;
  private _schedules: HTMLDivElement;
  private _heading: HTMLDivElement;
  private _count: HTMLSpanElement;
  private _more: HTMLDivElement;
  private _adder: HTMLDivElement;
  private _addOpen!: HTMLButtonElement;
  private _addEditor!: HTMLDivElement;
  private _kind!: HTMLSelectElement;
  private _when!: HTMLInputElement;
  private _message!: HTMLInputElement;
  private _addSave!: HTMLButtonElement;
  private _adding = false;
  /** The rows shown, by schedule id, in the order shown. */
  private _rows = new Map<string, IScheduleRow>();
  private _countdowns = new Map<Schedule, HTMLElement>();
  private _editing = false;
  private _goalKey = '';
}
