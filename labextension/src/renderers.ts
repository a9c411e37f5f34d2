/**
 * The DOM renderers of trajectory events: one entry per event kind of the protocol, so adding a
 * kind is adding an entry here (the type `EventRenderers` makes a missing one a compile error,
 * and labextension/test/renderers.spec.ts a test failure). Each renderer gives a one-line
 * summary (the item's tooltip) and the item's head and body; the registry builds the item.
 * Other extensions replace a kind's renderer through `IPrimeEventRenderers` (the renderer's
 * interfaces are in tokens.ts).
 */
import type { TranslationBundle } from '@jupyterlab/translation';
import { DisposableDelegate, IDisposable } from '@lumino/disposable';
import { Panel, Widget } from '@lumino/widgets';

import { formatBudget } from './budget';
import { h, stateBadge } from './dom';
import { clockTime, firstLine, formatBytes, formatCost, formatDuration, formatTokens } from './format';
import { author, formatInterval, scheduleTiming } from './longrun';
import { EventDataMap, EventKind, TrajectoryEvent } from './protocol';
import type { IEventRenderer, IPrimeEventRenderers, IRenderContext, IRenderedEvent } from './tokens';

export type EventRenderers = { [K in EventKind]: IEventRenderer<K> };

const text = (className: string, value: string) => h('div', { className }, value);
const pre = (className: string, value: string) => h('pre', { className }, value);
const strong = (value: string) => h('strong', {}, value);

function link(label: string, title: string, onClick: () => void): HTMLAnchorElement {
  const a = h('a', { href: '#', className: 'jp-PrimeSession-link', title }, label);
  a.addEventListener('click', ev => {
    ev.preventDefault();
    onClick();
  });
  return a;
}

/** Session ids the daemon makes (`s…` agents, `n…` notebooks); anything else is a name. */
const SESSION_ID = /^[a-z][0-9a-f]{8,}$/i;

/** "a, b, c" for at most `max` names, then "+N more". */
function names(list: readonly string[] | undefined, trans: TranslationBundle, max = 12): string {
  const all = list ?? [];
  const shown = all.slice(0, max).join(', ');
  return all.length > max ? `${shown} ${trans.__('+%1 more', all.length - max)}` : shown;
}

/** "name (why), other (why)" of a `{name: why}` record. */
function reasons(map: Record<string, string> | undefined): string {
  return Object.entries(map ?? {})
    .map(([name, why]) => `${name} (${why})`)
    .join(', ');
}

function labelled(className: string, label: string, value: string): HTMLElement | null {
  return value ? h('div', { className }, h('span', { className: 'jp-PrimeEvent-label' }, label), ' ', value) : null;
}

/** A tokens-in-and-out line of a model call: "1.2k tok (1k in / 200 out)". */
function tokens(usage: EventDataMap['model_call']['usage'], trans: TranslationBundle): string {
  const total = trans.__('%1 tok', formatTokens(usage.total_tokens));
  if (usage.prompt_tokens === undefined) {
    return total;
  }
  return `${total} (${trans.__('%1 in / %2 out', formatTokens(usage.prompt_tokens), formatTokens(usage.completion_tokens))})`;
}

/** Who did it: "you", "this agent", or a link to the other session. */
function by(who: string, event: TrajectoryEvent, { trans, openSession }: IRenderContext): Node | string {
  const name = author(who, event.session_id, trans);
  return SESSION_ID.test(who) && who !== event.session_id ? link(name, trans.__('Open %1', who), () => openSession(who)) : name;
}

/** "12 turns · 80k tok · 30m" of a continuation's limits. */
function limits(l: EventDataMap['continuation']['limits'], trans: TranslationBundle): string {
  const parts = [
    l?.turns !== undefined ? trans._n('%1 turn', '%1 turns', l.turns) : '',
    l?.tokens !== undefined ? trans.__('%1 tok', formatTokens(l.tokens)) : '',
    l?.seconds !== undefined ? formatInterval(l.seconds) : ''
  ];
  return parts.filter(Boolean).join(' · ');
}

/** What a gate ran: the command or expression, or "an answer". */
function gateTest(d: EventDataMap['gate'], trans: TranslationBundle): string {
  return d.kind === 'answer' ? trans.__('an answer') : d.command || d.kind;
}

/** Why a gate passed or failed, briefly: its exit status, a timeout, an error. */
function gateVerdict(d: EventDataMap['gate'], trans: TranslationBundle): string {
  if (d.timed_out) {
    return trans.__('timed out');
  }
  if (d.kind === 'shell' && d.exit_code !== undefined && d.exit_code !== null) {
    return trans.__('exit status %1', d.exit_code);
  }
  return d.error ? firstLine(d.error) : '';
}

/** "arr (50 MB), df (3 MB)" of spilled values. */
function spilled(list: EventDataMap['gc']['spilled'], trans: TranslationBundle): string {
  return names(
    (list ?? []).map(v => `${v.name} (${formatBytes(v.size)})`),
    trans
  );
}

export const RENDERERS: EventRenderers = {
  task: {
    summary: (d, trans) => trans.__('task: %1', firstLine(d.prompt)),
    render: ({ data: d }, { trans }) => ({
      head: [
        strong(trans.__('Task')),
        d.model ? ` · ${d.model}` : '',
        d.context_type ? ` · ${trans.__('context: %1', d.context_type)}` : '',
        d.budget ? ` · ${trans.__('budget: %1', formatBudget(d.budget, trans))}` : ''
      ],
      body: [text('jp-PrimeEvent-prompt', d.prompt)]
    })
  },
  state: {
    summary: (d, trans) =>
      d.reason ? trans.__('state → %1 (%2)', d.state, d.reason) : trans.__('state → %1', d.state),
    render: ({ data: d }) => ({ head: ['→ ', stateBadge(d.state), d.reason ? ` ${d.reason}` : ''] })
  },
  model_call: {
    summary: (d, trans) =>
      trans.__('model call %1: %2, %3', d.model || trans.__('(unknown model)'), trans.__('%1 tok', formatTokens(d.usage.total_tokens)), formatCost(d.cost)),
    render: ({ data: d }, { trans }) => ({
      head: [
        trans.__('Model call'),
        ' · ',
        h('span', { className: 'jp-PrimeEvent-model' }, d.model || trans.__('(unknown model)')),
        d.purpose ? ` · ${d.purpose === 'llm' ? 'llm()' : d.purpose}` : '',
        ` · ${tokens(d.usage, trans)}`,
        ` · ${formatCost(d.cost)}`,
        typeof d.duration === 'number' ? ` · ${formatDuration(d.duration)}` : '',
        d.finish_reason && d.finish_reason !== 'stop' && d.finish_reason !== 'tool_calls'
          ? ` · ${trans.__('finished: %1', d.finish_reason)}`
          : ''
      ]
    })
  },
  assistant: {
    summary: (d, trans) => trans.__('model: %1', firstLine(d.content)),
    render: ({ data: d }, { trans, markdown }) =>
      // A message that only carries a tool call: the cell event shows the code.
      d.content && d.content.trim()
        ? { head: [strong(trans.__('Model'))], body: [markdown(d.content)] }
        : { head: [], classes: ['jp-mod-empty'] }
  },
  cell: {
    summary: (d, trans) =>
      d.source === 'user'
        ? trans.__('user cell [%1] %2', d.execution_count ?? ' ', d.status)
        : d.source === 'setup'
          ? trans.__('harness setup cell [%1] %2', d.execution_count ?? ' ', d.status)
          : trans.__('cell [%1] %2', d.execution_count ?? ' ', d.status),
    render: ({ data: d }, { trans, code, outputs }) => {
      const user = d.source === 'user';
      // Who ran it: the agent, a person, or the harness before the first turn (its imports).
      const who = { user: trans.__('user'), setup: trans.__('harness setup'), agent: trans.__('agent') }[d.source];
      return {
        classes: user ? ['jp-mod-user'] : [],
        head: [
          h('span', { className: 'jp-PrimeEvent-prompt-count' }, `[${d.execution_count ?? ' '}]`),
          h('span', { className: `jp-PrimeEvent-source jp-mod-${d.source}` }, who),
          h('span', { className: `jp-PrimeEvent-status jp-mod-${d.status}` }, d.status),
          typeof d.duration === 'number' ? ` ${formatDuration(d.duration)}` : ''
        ],
        body: [
          code(d.code),
          d.outputs.length ? outputs(d.outputs) : null,
          d.truncated_note ? text('jp-PrimeEvent-note', d.truncated_note) : null
        ]
      };
    }
  },
  observation: {
    summary: (d, trans) => trans.__('observation: %1', firstLine(d.text)),
    render: ({ data: d }, { trans }) => ({
      head: [],
      body: [h('details', { className: 'jp-PrimeEvent-observation' }, h('summary', {}, trans.__('What the model was shown')), pre('', d.text))]
    })
  },
  answer: {
    summary: (d, trans) =>
      d.kind === 'reply' ? trans.__('reply: %1', firstLine(d.repr)) : trans.__('answer: %1', firstLine(d.repr)),
    render: ({ data: d }, { trans, markdown }) => ({
      head: [strong(d.kind === 'reply' ? trans.__('Reply') : trans.__('Answer'))],
      body: [d.kind === 'reply' ? markdown(d.repr) : pre('jp-PrimeEvent-answerRepr', d.repr)]
    })
  },
  child: {
    summary: (d, trans) => trans.__('spawned %1', d.name || d.child_id),
    render: ({ data: d }, { trans, openSession }) => ({
      head: [
        trans.__('Spawned sub-agent'),
        ' ',
        link(d.name || d.child_id, trans.__('Open %1', d.child_id), () => openSession(d.child_id))
      ],
      body: [d.prompt ? text('jp-PrimeEvent-prompt', d.prompt) : null]
    })
  },
  mail_in: {
    summary: (d, trans) => trans.__('message from %1: %2', d.sender || d.from, firstLine(d.message)),
    render: ({ data: d }, { trans, openSession }) => ({
      head: [
        trans.__('Message from'),
        ' ',
        SESSION_ID.test(d.from) ? link(d.sender || d.from, trans.__('Open %1', d.from), () => openSession(d.from)) : d.sender || d.from
      ],
      body: [text('jp-PrimeEvent-message', d.message)]
    })
  },
  mail_out: {
    summary: (d, trans) => trans.__('message to %1: %2', d.to, firstLine(d.message)),
    render: ({ data: d }, { trans, openSession }) => ({
      head: [
        trans.__('Message to'),
        ' ',
        SESSION_ID.test(d.to) ? link(d.to, trans.__('Open %1', d.to), () => openSession(d.to)) : d.to
      ],
      body: [text('jp-PrimeEvent-message', d.message)]
    })
  },
  compaction: {
    summary: (d, trans) =>
      trans._n(
        'context compacted: %1 earlier message summarised',
        'context compacted: %1 earlier messages summarised',
        d.summarised_messages
      ),
    render: ({ data: d }, { trans }) => ({
      head: [
        strong(trans.__('Context compacted')),
        ' · ',
        trans._n('%1 earlier message summarised', '%1 earlier messages summarised', d.summarised_messages),
        d.before_tokens !== undefined && d.after_tokens !== undefined
          ? ` · ${trans.__('%1 → %2 tok', formatTokens(d.before_tokens), formatTokens(d.after_tokens))}`
          : '',
        ' · ',
        d.reason === 'requested' ? trans.__('asked for with compact()') : trans.__('the model’s window was full')
      ],
      body: [
        d.summary
          ? h('details', { className: 'jp-PrimeEvent-summary' }, h('summary', {}, trans.__('Summary the model now sees')), pre('', d.summary))
          : null,
        d.error ? pre('jp-PrimeEvent-errorText', d.error) : null
      ]
    })
  },
  snapshot: {
    summary: (d, trans) => trans._n('REPL saved: %1 variable', 'REPL saved: %1 variables', d.saved.length),
    render: ({ data: d }, { trans }) => ({
      head: [
        strong(trans.__('REPL saved')),
        ' · ',
        trans._n('%1 variable', '%1 variables', d.saved.length),
        d.size !== undefined ? ` · ${formatBytes(d.size)}` : '',
        d.reason ? ` · ${d.reason}` : ''
      ],
      body: [
        labelled('jp-PrimeEvent-names', trans.__('saved:'), names(d.saved, trans)),
        labelled('jp-PrimeEvent-names jp-mod-skipped', trans.__('not saved:'), reasons(d.skipped))
      ]
    })
  },
  restore: {
    summary: (d, trans) => trans._n('REPL restored: %1 variable', 'REPL restored: %1 variables', d.restored.length),
    render: ({ data: d }, { trans }) => ({
      head: [
        strong(trans.__('REPL restored')),
        ' · ',
        trans._n('%1 variable', '%1 variables', d.restored.length),
        d.reason ? ` · ${d.reason}` : ''
      ],
      body: [
        labelled('jp-PrimeEvent-names', trans.__('restored:'), names(d.restored, trans)),
        labelled('jp-PrimeEvent-names jp-mod-skipped', trans.__('failed:'), reasons(d.failed)),
        labelled('jp-PrimeEvent-names jp-mod-skipped', trans.__('not saved:'), reasons(d.skipped)),
        labelled('jp-PrimeEvent-names jp-mod-skipped', trans.__('lost:'), names(d.lost, trans))
      ]
    })
  },
  resume: {
    summary: (d, trans) => trans.__('resumed: %1', firstLine(d.reason)),
    render: ({ data: d }, { trans }) => ({
      head: [strong(trans.__('Resumed')), ' · ', d.reason],
      body: [
        labelled('jp-PrimeEvent-names', trans.__('in flight:'), d.in_flight ?? ''),
        labelled('jp-PrimeEvent-names jp-mod-skipped', trans.__('lost:'), names(d.lost, trans)),
        labelled('jp-PrimeEvent-names', trans.__('from snapshot:'), d.snapshot ?? '')
      ]
    })
  },
  kernel: {
    summary: (d, trans) => trans.__('kernel %1', d.event),
    render: ({ data: d }, { trans }) => {
      const what = {
        died: trans.__('Kernel died'),
        killed: trans.__('Kernel killed'),
        restarted: trans.__('Kernel restarted'),
        gone: trans.__('Kernel gone')
      }[d.event];
      return {
        head: [
          strong(what),
          d.exit_code !== undefined && d.exit_code !== null ? ` · ${trans.__('exit code %1', d.exit_code)}` : '',
          d.signal ? ` · ${trans.__('signal %1', d.signal)}` : ''
        ],
        body: [d.detail ? text('jp-PrimeEvent-note', d.detail) : null]
      };
    }
  },
  refinement: {
    summary: (d, trans) => trans.__('harness refinement %1: %2', d.refinement_id, d.status),
    render: ({ data: d }, { trans, openRefinement }) => ({
      head: [
        strong(trans.__('Harness refined')),
        ' · ',
        link(d.refinement_id, trans.__('Show refinement %1 in the Harness view', d.refinement_id), () =>
          openRefinement(d.refinement_id)
        ),
        ' · ',
        h('span', { className: `jp-PrimeHarness-refStatus jp-mod-${d.status}` }, d.status)
      ]
    })
  },
  verified: {
    summary: (d, trans) =>
      d.correct ? trans.__('answer verified right by %1', d.by) : trans.__('answer verified wrong by %1', d.by),
    render: ({ data: d }, { trans, openRefinement }) => {
      const learned = d.learned;
      return {
        head: [
          strong(d.correct ? trans.__('Verified right') : trans.__('Verified wrong')),
          ' · ',
          d.by === 'user' ? trans.__('by you') : trans.__('by %1', d.by),
          ...(learned
            ? [
                ' · ',
                trans.__('learned %1', learned.entry ?? ''),
                ' (',
                link(learned.refinement_id, trans.__('Show proposal %1 in the Harness view', learned.refinement_id), () =>
                  openRefinement(learned.refinement_id)
                ),
                `, ${learned.status})`
              ]
            : [])
        ],
        body: [
          d.note ? text('jp-PrimeEvent-note', d.note) : null,
          d.refused ? text('jp-PrimeEvent-note', trans.__('Nothing learned: %1', d.refused)) : null
        ],
        classes: [d.correct ? 'jp-mod-right' : 'jp-mod-wrong']
      };
    }
  },
  goal: {
    summary: (d, trans) =>
      ({
        set: () => trans.__('goal set: %1', firstLine(d.text)),
        progress: () => trans.__('goal progress: %1', firstLine(d.note)),
        done: () => trans.__('goal done: %1', firstLine(d.summary || d.text)),
        cleared: () => trans.__('goal cleared')
      })[d.event](),
    render: (event, ctx) => {
      const { data: d } = event;
      const { trans } = ctx;
      const what = {
        set: trans.__('Goal set'),
        progress: trans.__('Progress on the goal'),
        done: trans.__('Goal done'),
        cleared: trans.__('Goal cleared')
      }[d.event];
      return {
        classes: [`jp-mod-${d.event}`],
        head: [strong(what), ' · ', trans.__('by'), ' ', by(d.by, event, ctx)],
        body: [
          d.event === 'progress' ? text('jp-PrimeEvent-goalText', d.note ?? '') : null,
          d.event !== 'progress' && d.text ? text(`jp-PrimeEvent-goalText${d.event === 'cleared' ? ' jp-mod-cleared' : ''}`, d.text) : null,
          d.summary ? labelled('jp-PrimeEvent-goalSummary', trans.__('summary:'), d.summary) : null
        ]
      };
    }
  },
  continuation: {
    summary: (d, trans) => trans.__('continuation %1 of %2', d.continuation, d.of),
    render: ({ data: d }, { trans }) => ({
      head: [
        strong(trans.__('Continuation %1 of %2', d.continuation, d.of)),
        d.limits ? ` · ${limits(d.limits, trans)}` : '',
        d.gate ? ` · ${trans.__('gate: %1', d.gate)}` : ''
      ],
      body: [d.reason ? text('jp-PrimeEvent-note', trans.__('the previous one ended: %1', d.reason)) : null]
    })
  },
  gate: {
    summary: (d, trans) =>
      d.passed ? trans.__('gate passed: %1', gateTest(d, trans)) : trans.__('gate failed: %1', gateTest(d, trans)),
    render: ({ data: d }, { trans }) => {
      const verdict = gateVerdict(d, trans);
      return {
        classes: [d.passed ? 'jp-mod-passed' : 'jp-mod-failed'],
        head: [
          strong(d.passed ? trans.__('Gate passed') : trans.__('Gate failed')),
          ' · ',
          h('code', { className: 'jp-PrimeEvent-gateTest' }, gateTest(d, trans)),
          verdict ? ` · ${verdict}` : '',
          ` · ${trans.__('after continuation %1', d.continuation)}`,
          typeof d.duration === 'number' ? ` · ${formatDuration(d.duration)}` : ''
        ],
        body: [
          labelled('jp-PrimeEvent-note', trans.__('the continuation ended:'), d.ended ?? ''),
          d.output && d.output.trim()
            ? h('details', { className: 'jp-PrimeEvent-summary', open: !d.passed }, h('summary', {}, trans.__('Output')), pre('', d.output))
            : null,
          d.error && !d.timed_out ? pre('jp-PrimeEvent-errorText', d.error) : null
        ]
      };
    }
  },
  schedule: {
    summary: (d, trans) =>
      d.reason
        ? trans.__('schedule %1 %2: %3', d.schedule_id, d.event, firstLine(d.reason))
        : trans.__('schedule %1 %2', d.schedule_id, d.event),
    render: (event, ctx) => {
      const { data: d } = event;
      const { trans, openSession } = ctx;
      const what = {
        created: trans.__('Schedule made'),
        cancelled: trans.__('Schedule cancelled'),
        ended: trans.__('Schedule ended'),
        skipped: trans.__('Tick skipped')
      }[d.event];
      const target = d.target_id && d.target_id !== event.session_id ? d.target_id : null;
      return {
        head: [
          strong(what),
          d.kind && d.spec ? ` · ${scheduleTiming({ kind: d.kind, spec: d.spec }, trans)}` : '',
          target ? ' · → ' : '',
          target ? link(target, trans.__('Open %1', target), () => openSession(target)) : null,
          d.owner ? ` · ${trans.__('by')} ` : '',
          d.owner ? by(d.owner, event, ctx) : null,
          d.event === 'created' && d.next ? ` · ${trans.__('first tick %1', clockTime(d.next))}` : ''
        ],
        body: [
          d.message && d.event === 'created' ? text('jp-PrimeEvent-message', d.message) : null,
          d.reason ? text('jp-PrimeEvent-note', d.reason) : null
        ]
      };
    }
  },
  gc: {
    summary: (d, trans) => {
      const parts = [
        d.spilled?.length ? trans.__('spilled %1', names(d.spilled.map(v => v.name), trans)) : '',
        d.dropped?.length ? trans.__('dropped %1', names(d.dropped, trans)) : ''
      ].filter(Boolean);
      return trans.__('memory (%1): %2', d.reason, parts.join('; ') || trans.__('nothing'));
    },
    render: ({ data: d }, { trans }) => {
      const why = {
        requested: trans.__('gc() in the REPL'),
        compaction: trans.__('at a compaction'),
        passivation: trans.__('before passivation')
      }[d.reason];
      const size = (d.spilled ?? []).reduce((sum, v) => sum + v.size, 0);
      return {
        head: [
          strong(trans.__('Memory')),
          ' · ',
          why,
          d.spilled?.length ? ` · ${trans._n('%1 value spilled to disk', '%1 values spilled to disk', d.spilled.length)} (${formatBytes(size)})` : '',
          d.dropped?.length ? ` · ${trans._n('%1 dropped', '%1 dropped', d.dropped.length)}` : ''
        ],
        body: [
          labelled('jp-PrimeEvent-names', trans.__('spilled:'), spilled(d.spilled, trans)),
          labelled('jp-PrimeEvent-names', trans.__('dropped:'), names(d.dropped, trans)),
          labelled('jp-PrimeEvent-names jp-mod-skipped', trans.__('failed:'), reasons(d.failed))
        ]
      };
    }
  },
  error: {
    summary: (d, trans) => trans.__('error: %1', firstLine(d.message)),
    render: ({ data: d }, { trans }) => ({
      head: [strong(trans.__('Error'))],
      body: [pre('jp-PrimeEvent-errorText', d.message)]
    })
  }
};

/**
 * The renderer of each event kind, and the item every event is shown as: a panel
 * `.jp-PrimeEvent.jp-PrimeEvent-<kind>` (data-seq, data-kind) with its head (tooltip: seq, time
 * and summary) and body. A kind without a renderer (from a newer daemon) shows its data as JSON.
 * (TypeScript cannot tie a kind to its renderer's type through a Map: the casts stand for that.)
 */
export class EventRendererRegistry implements IPrimeEventRenderers {
  constructor(renderers: EventRenderers = RENDERERS) {
    for (const [kind, renderer] of Object.entries(renderers)) {
      this._renderers.set(kind, renderer as IEventRenderer);
    }
  }

  /** The kinds with a renderer. */
  kinds(): string[] {
    return Array.from(this._renderers.keys());
  }

  get<K extends EventKind>(kind: K): IEventRenderer<K> | undefined {
    return this._renderers.get(kind) as IEventRenderer<K> | undefined;
  }

  /** Render `kind` with `renderer` until the result is disposed (the previous one comes back). */
  set<K extends EventKind>(kind: K, renderer: IEventRenderer<K>): IDisposable {
    const previous = this._renderers.get(kind);
    this._renderers.set(kind, renderer as unknown as IEventRenderer);
    return new DisposableDelegate(() => {
      if (previous) {
        this._renderers.set(kind, previous);
      } else {
        this._renderers.delete(kind);
      }
    });
  }

  summary(event: TrajectoryEvent, trans: TranslationBundle): string {
    const renderer = this._renderers.get(event.kind) as IEventRenderer | undefined;
    return renderer ? renderer.summary(event.data as never, trans) : event.kind;
  }

  render(event: TrajectoryEvent, ctx: IRenderContext): Panel {
    const renderer = this._renderers.get(event.kind) as IEventRenderer | undefined;
    const rendered: IRenderedEvent = renderer
      ? renderer.render(event as never, ctx)
      : { head: [event.kind], body: [pre('', JSON.stringify(event.data, null, 2))] };
    const item = new Panel();
    item.addClass('jp-PrimeEvent');
    item.addClass(`jp-PrimeEvent-${event.kind}`);
    for (const c of rendered.classes ?? []) {
      item.addClass(c);
    }
    item.node.dataset.seq = String(event.seq);
    item.node.dataset.kind = event.kind;
    const summary = renderer ? renderer.summary(event.data as never, ctx.trans) : event.kind;
    const head = rendered.head.filter((p): p is Node | string => p !== null && p !== '');
    if (head.length) {
      const title = `#${event.seq} ${clockTime(event.ts)} · ${summary}`;
      item.addWidget(new Widget({ node: h('div', { className: 'jp-PrimeEvent-head', title }, ...head) }));
    }
    for (const part of rendered.body ?? []) {
      if (part) {
        item.addWidget(part instanceof Widget ? part : new Widget({ node: part }));
      }
    }
    return item;
  }

  private _renderers = new Map<string, IEventRenderer>();
}
