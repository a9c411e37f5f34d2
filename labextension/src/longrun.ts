/**
 * Goals, schedules and autonomy as the panel shows them: what a schedule's timing, next tick
 * and counts read as, the order schedules are listed in, the small marks of a session row, and
 * the request for a schedule the user makes.
 * Pure: no DOM, no JupyterLab at run time (unit tested in node: labextension/test/longrun.spec.ts).
 */
import type { TranslationBundle } from '@jupyterlab/translation';

import { firstLine, toMillis } from './format';
import type { CreateSchedule, Goal, Schedule, Session } from './protocol';

/** 0.5 -> "0.5s", 90 -> "1m 30s", 600 -> "10m", 5400 -> "1h 30m", 90000 -> "1d 1h": the non-zero units. */
export function formatInterval(seconds: number): string {
  if (!isFinite(seconds) || seconds < 0) {
    return '—';
  }
  if (seconds < 60 && !Number.isInteger(seconds)) {
    return `${Number(seconds.toFixed(1))}s`;
  }
  let rest = Math.round(seconds);
  const parts: string[] = [];
  for (const [unit, size] of [
    ['d', 86400],
    ['h', 3600],
    ['m', 60],
    ['s', 1]
  ] as const) {
    const n = Math.floor(rest / size);
    rest -= n * size;
    if (n) {
      parts.push(`${n}${unit}`);
    }
  }
  // Two units say enough (a day-long interval's seconds are noise).
  return parts.length ? parts.slice(0, 2).join(' ') : '0s';
}

/** A date and time of the viewer's locale, for epoch seconds or an ISO string. */
export function dateTime(t: number | string | null | undefined): string {
  const ms = toMillis(t);
  return ms === null ? '' : new Date(ms).toLocaleString();
}

/** When a schedule ticks: "every 10m", "at <date time>", "cron 0 9 * * 1". */
export function scheduleTiming(s: Pick<Schedule, 'kind' | 'spec'>, trans: TranslationBundle): string {
  switch (s.kind) {
    case 'every':
      // The daemon stores an interval as its seconds (`repr(float)`).
      return trans.__('every %1', formatInterval(Number(s.spec)));
    case 'at':
      return trans.__('at %1', dateTime(s.spec) || s.spec);
    default:
      return trans.__('cron %1', s.spec);
  }
}

/** "next in 4s" (or "due now") for an active schedule with a next tick; null otherwise. */
export function nextTick(s: Pick<Schedule, 'state' | 'next'>, nowMs: number, trans: TranslationBundle): string | null {
  const next = toMillis(s.next);
  if (s.state !== 'active' || next === null) {
    return null;
  }
  const seconds = Math.ceil((next - nowMs) / 1000);
  return seconds > 0 ? trans.__('next in %1', formatInterval(seconds)) : trans.__('due now');
}

/** "3 delivered", then the missed and skipped ticks when there are any. */
export function tickCounts(s: Pick<Schedule, 'ticks' | 'missed' | 'skipped'>, trans: TranslationBundle): string {
  const parts = [trans._n('%1 delivered', '%1 delivered', s.ticks)];
  if (s.missed) {
    parts.push(trans._n('%1 missed', '%1 missed', s.missed));
  }
  if (s.skipped) {
    parts.push(trans._n('%1 skipped', '%1 skipped', s.skipped));
  }
  return parts.join(' · ');
}

/**
 * Who set a goal, noted progress or made a schedule (a session id or "user"), as the view of
 * session `viewed` says it: "you", "this agent", or the other session's id.
 */
export function author(by: string, viewed: string, trans: TranslationBundle, kind: string = 'agent'): string {
  if (by === 'user') {
    return trans.__('you');
  }
  if (by !== viewed) {
    return by;
  }
  // A notebook's own goal.set() is the person's code in that notebook, not an agent's.
  return kind === 'notebook' ? trans.__('this notebook') : trans.__('this agent');
}

/** Active schedules first, soonest tick first; then the ended ones, newest first. */
export function sortSchedules(list: readonly Schedule[]): Schedule[] {
  const rank = (s: Schedule) => (s.state === 'active' ? 0 : 1);
  return [...list].sort(
    (a, b) =>
      rank(a) - rank(b) ||
      (rank(a) === 0 ? (a.next ?? Infinity) - (b.next ?? Infinity) : 0) ||
      b.created - a.created
  );
}

/** The plan and the progress of an autonomous session, read from its record's options. */
export interface IAutonomy {
  /** The continuation running (or last run), 0 before the first. */
  continuation: number;
  of: number;
  /** What ends the run: the gate's command or expression, or null (an answer passes). */
  gate: string | null;
  phase: string;
}

/** The autonomy of a session (`options.autonomous` and `options.autonomy`), or null. */
export function autonomy(s: Pick<Session, 'options'>): IAutonomy | null {
  const plan = s.options?.autonomous;
  if (!plan || typeof plan !== 'object') {
    return null;
  }
  const { gate, max_continuations } = plan as { gate?: { shell?: string; python?: string } | null; max_continuations?: number };
  const state = (s.options.autonomy ?? {}) as { continuation?: number; phase?: string };
  return {
    continuation: state.continuation ?? 0,
    of: max_continuations ?? 0,
    gate: gate ? (gate.shell ?? gate.python ?? null) : null,
    phase: state.phase ?? ''
  };
}

/** "continuation 2 of 3 · gate: pytest -q" (or "… · ends when it answers"). */
export function autonomyText(a: IAutonomy, trans: TranslationBundle): string {
  const where = a.continuation ? trans.__('continuation %1 of %2', a.continuation, a.of) : trans.__('up to %1 continuations', a.of);
  const gate = a.gate ? trans.__('gate: %1', a.gate) : trans.__('ends when it answers');
  return `${where} · ${gate}`;
}

/** A small mark on a session's row: its goal, or that it runs autonomously. */
export interface ISessionMark {
  kind: 'goal' | 'autonomous';
  /** The mark's text. */
  label: string;
  /** Its modifier: the goal's status, the autonomous run's phase. */
  status: string;
  title: string;
}

/** The marks of a session's row: its goal (active or done), its autonomy. */
export function sessionMarks(s: Pick<Session, 'goal' | 'options'>, trans: TranslationBundle): ISessionMark[] {
  const marks: ISessionMark[] = [];
  const goal: Goal | undefined = s.goal;
  if (goal) {
    const done = goal.status === 'done';
    marks.push({
      kind: 'goal',
      label: done ? trans.__('goal ✓') : trans.__('goal'),
      status: goal.status,
      title: done ? trans.__('Goal (done): %1', firstLine(goal.text, 200)) : trans.__('Goal: %1', firstLine(goal.text, 200))
    });
  }
  const auto = autonomy(s);
  if (auto) {
    marks.push({
      kind: 'autonomous',
      label: auto.continuation ? trans.__('auto %1/%2', auto.continuation, auto.of) : trans.__('auto'),
      status: auto.phase,
      title: trans.__('Autonomous: %1', autonomyText(auto, trans))
    });
  }
  return marks;
}

/** How a schedule made in the view repeats: every interval, once at a time, or by cron. */
export type ScheduleKind = 'every' | 'at' | 'cron';

/**
 * The body of `POST /api/prime/schedules` from what the user typed: a bare number of seconds
 * is sent as a number, the rest as typed (the daemon parses durations, times and cron and
 * says what is wrong). Throws an Error with a user-facing message when a field is empty.
 */
export function scheduleRequest(
  kind: ScheduleKind,
  when: string,
  message: string,
  trans: TranslationBundle
): Omit<CreateSchedule, 'session_id'> {
  const spec = when.trim();
  if (!spec) {
    const example = { every: '10m', at: 'in 30m', cron: '*/5 * * * *' }[kind];
    throw new Error(trans.__('Say when (e.g. %1).', example));
  }
  const text = message.trim();
  if (!text) {
    throw new Error(trans.__('Type the message each tick delivers.'));
  }
  const body: Omit<CreateSchedule, 'session_id'> = { message: text };
  if (kind === 'cron') {
    body.cron = spec;
  } else {
    body[kind] = /^\d+(\.\d+)?$/.test(spec) ? Number(spec) : spec;
  }
  return body;
}
