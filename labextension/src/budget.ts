/**
 * Budgets: parsing what a person types in the New agent form (and in the settings) into the
 * daemon's budget keys and autonomous limits, and showing a session's budget. Pure
 * (labextension/test/budget.spec.ts).
 */
import type { TranslationBundle } from '@jupyterlab/translation';

import { formatCost, formatElapsed, formatTokens } from './format';
import { untranslated } from './i18n';
import type { Autonomous, Budget } from './protocol';
import type { IBudgetInput } from './tokens';

/** A positive count with an optional k/M suffix ("50k", "1.5M", "200,000"); null if empty. */
function parseCount(raw: string, what: string, example: string, trans: TranslationBundle): number | null {
  const t = raw.trim().replace(/[_,\s]/g, '');
  if (!t) {
    return null;
  }
  const m = /^(\d+(?:\.\d+)?)([kKmM]?)$/.exec(t);
  if (!m) {
    throw new Error(trans.__('%1 must be a positive number (e.g. %2), got "%3"', what, example, raw));
  }
  const mult = { '': 1, k: 1e3, K: 1e3, m: 1e6, M: 1e6 }[m[2]] as number;
  const value = Math.round(parseFloat(m[1]) * mult);
  if (value <= 0) {
    throw new Error(trans.__('%1 must be positive', what));
  }
  return value;
}

/** Seconds from "90", "90s", "10m", "1.5h"; null if empty. */
function parseDuration(raw: string, what: string, trans: TranslationBundle): number | null {
  const t = raw.trim().toLowerCase().replace(/\s+/g, '');
  if (!t) {
    return null;
  }
  const m = /^(\d+(?:\.\d+)?)(s|m|min|h)?$/.exec(t);
  if (!m) {
    throw new Error(
      trans.__('%1 must be seconds or a duration like 90s, 10m, 1.5h, got "%2"', what, raw)
    );
  }
  const mult = m[2] === 'h' ? 3600 : m[2] === 'm' || m[2] === 'min' ? 60 : 1;
  const value = parseFloat(m[1]) * mult;
  if (value <= 0) {
    throw new Error(trans.__('%1 must be positive', what));
  }
  return value;
}

/**
 * Parse the budget inputs into the daemon's budget keys. Empty strings mean "no limit";
 * undefined when no limit is set at all. Throws an Error with a user-facing message for
 * invalid input.
 */
export function parseBudget(input: IBudgetInput, trans: TranslationBundle = untranslated): Budget | undefined {
  const budget: Budget = {};
  const tokens = parseCount(input.tokens ?? '', trans.__('Token budget'), '50000 or 50k', trans);
  if (tokens !== null) {
    budget.tokens = tokens;
  }
  const d = (input.dollars ?? '').trim().replace(/^\$/, '');
  if (d) {
    const value = Number(d);
    if (!isFinite(value) || value <= 0) {
      throw new Error(trans.__('Dollar budget must be a positive number, got "%1"', input.dollars));
    }
    budget.dollars = value;
  }
  const seconds = parseDuration(input.seconds ?? '', trans.__('Time limit'), trans);
  if (seconds !== null) {
    budget.seconds = seconds;
  }
  const turns = parseCount(input.turns ?? '', trans.__('Turn budget'), '30', trans);
  if (turns !== null) {
    budget.turns = turns;
  }
  return Object.keys(budget).length ? budget : undefined;
}

/** A whole number from 1 to `max` ("3"); null if empty. */
function parseWhole(raw: string, what: string, max: number, trans: TranslationBundle): number | null {
  const t = raw.trim();
  if (!t) {
    return null;
  }
  const value = /^\d+$/.test(t) ? Number(t) : NaN;
  if (!(value >= 1 && value <= max)) {
    throw new Error(trans.__('%1 must be a whole number from 1 to %2, got "%3"', what, max, raw));
  }
  return value;
}

/** What the user typed for an autonomous run (empty: the daemon's default). */
export interface IAutonomousInput {
  gate?: string;
  maxContinuations?: string;
  turns?: string;
  tokens?: string;
  seconds?: string;
}

/**
 * Parse the autonomous fields into the daemon's `autonomous` value: true when all are empty
 * (the daemon's defaults; an answer passes), else the gate (a shell command) and the limits of
 * each continuation that were given. Throws an Error with a user-facing message for invalid
 * input.
 */
export function parseAutonomous(input: IAutonomousInput, trans: TranslationBundle = untranslated): Autonomous {
  const plan: Exclude<Autonomous, boolean> = {};
  const gate = (input.gate ?? '').trim();
  if (gate) {
    plan.gate = gate;
  }
  const continuations = parseWhole(input.maxContinuations ?? '', trans.__('Continuations'), 1000, trans);
  if (continuations !== null) {
    plan.max_continuations = continuations;
  }
  const turns = parseWhole(input.turns ?? '', trans.__('Turns per continuation'), 10000, trans);
  if (turns !== null) {
    plan.turns = turns;
  }
  const tokens = parseCount(input.tokens ?? '', trans.__('Tokens per continuation'), '80k', trans);
  if (tokens !== null) {
    plan.tokens = tokens;
  }
  const seconds = parseDuration(input.seconds ?? '', trans.__('Time per continuation'), trans);
  if (seconds !== null) {
    plan.seconds = seconds;
  }
  return Object.keys(plan).length ? plan : true;
}

/** "tokens 50k, dollars $0.50, time 10m 00s, turns 30" for a session's budget. */
export function formatBudget(
  budget: Record<string, unknown> | null | undefined,
  trans: TranslationBundle = untranslated
): string {
  if (!budget) {
    return '';
  }
  const parts: string[] = [];
  for (const [k, v] of Object.entries(budget)) {
    const n = Number(v);
    if (v === null || v === undefined || typeof v === 'object') {
      continue; // bookkeeping the daemon keeps beside the limits
    }
    if (k === 'dollars') {
      parts.push(trans.__('dollars %1', formatCost(n)));
    } else if (k === 'tokens') {
      parts.push(trans.__('tokens %1', formatTokens(n)));
    } else if (k === 'seconds') {
      parts.push(trans.__('time %1', formatElapsed(n)));
    } else if (k === 'turns') {
      parts.push(trans.__('turns %1', String(v)));
    } else {
      parts.push(`${k} ${String(v)}`);
    }
  }
  return parts.join(', ');
}
