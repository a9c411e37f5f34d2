/**
 * Labels, times and numbers as the panel shows them. Pure: no DOM, no JupyterLab at run time
 * (unit tested in node: labextension/test/format.spec.ts).
 */
import type { Session } from './protocol';
import { isTerminal } from './states';

/** A display label: the session name, or the first words of its prompt. */
export function sessionLabel(s: Pick<Session, 'id' | 'name' | 'prompt'>, maxWords = 8): string {
  if (s.name && s.name.trim()) {
    return s.name.trim();
  }
  const prompt = (s.prompt || '').trim().replace(/\s+/g, ' ');
  if (!prompt) {
    return s.id;
  }
  const words = prompt.split(' ');
  if (words.length <= maxWords) {
    return prompt;
  }
  return words.slice(0, maxWords).join(' ') + '…';
}

/**
 * Milliseconds since the epoch for a timestamp given as epoch seconds, epoch
 * milliseconds or an ISO string; null if absent or unparseable.
 */
export function toMillis(t: string | number | null | undefined): number | null {
  if (t === null || t === undefined || t === '') {
    return null;
  }
  if (typeof t === 'number') {
    if (!isFinite(t)) {
      return null;
    }
    // Epoch seconds until the year 33658; anything larger is milliseconds.
    return t > 1e12 ? t : t * 1000;
  }
  const asNumber = Number(t);
  if (!isNaN(asNumber)) {
    return toMillis(asNumber);
  }
  const parsed = Date.parse(t);
  return isNaN(parsed) ? null : parsed;
}

/** Seconds the session has been (or was) alive: started (or created) to ended (or now). */
export function elapsedSeconds(
  s: Pick<Session, 'state' | 'created' | 'started' | 'ended'>,
  nowMs: number = Date.now()
): number | null {
  const start = toMillis(s.started) ?? toMillis(s.created);
  if (start === null) {
    return null;
  }
  const ended = toMillis(s.ended);
  if (ended === null && isTerminal(s.state)) {
    return null; // ended, but we do not know when: do not keep ticking
  }
  return Math.max(0, ((ended ?? nowMs) - start) / 1000);
}

/** 950 -> "950", 1234 -> "1.2k", 45678 -> "46k", 1234567 -> "1.2M". */
export function formatTokens(n: number | null | undefined): string {
  if (n === null || n === undefined || !isFinite(n)) {
    return '—';
  }
  const abs = Math.abs(n);
  const fmt = (v: number, unit: string) =>
    (v < 10 ? v.toFixed(1).replace(/\.0$/, '') : Math.round(v).toString()) + unit;
  if (abs < 1000) {
    return Math.round(n).toString();
  }
  if (abs < 999_500) {
    return fmt(n / 1000, 'k');
  }
  if (abs < 999_500_000) {
    return fmt(n / 1_000_000, 'M');
  }
  return fmt(n / 1_000_000_000, 'B');
}

/** 0 -> "$0", 0.00042 -> "$0.0004", 0.123 -> "$0.12", 12.345 -> "$12.35", 1234.5 -> "$1,235". */
export function formatCost(c: number | null | undefined): string {
  if (c === null || c === undefined || !isFinite(c)) {
    return '—';
  }
  if (c === 0) {
    return '$0';
  }
  const abs = Math.abs(c);
  const sign = c < 0 ? '-' : '';
  if (abs < 0.0001) {
    return `${sign}<$0.0001`;
  }
  if (abs < 0.01) {
    return `${sign}$${abs.toFixed(4)}`;
  }
  if (abs < 1000) {
    return `${sign}$${abs.toFixed(2)}`;
  }
  return `${sign}$${Math.round(abs).toLocaleString('en-US')}`;
}

/** 4 -> "4s", 185 -> "3m 05s", 3720 -> "1h 02m", 93600 -> "1d 2h". */
export function formatElapsed(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || !isFinite(seconds) || seconds < 0) {
    return '—';
  }
  const s = Math.floor(seconds);
  if (s < 60) {
    return `${s}s`;
  }
  const pad = (v: number) => v.toString().padStart(2, '0');
  if (s < 3600) {
    return `${Math.floor(s / 60)}m ${pad(s % 60)}s`;
  }
  if (s < 86400) {
    return `${Math.floor(s / 3600)}h ${pad(Math.floor((s % 3600) / 60))}m`;
  }
  return `${Math.floor(s / 86400)}d ${Math.floor((s % 86400) / 3600)}h`;
}

/** A duration measured in seconds, to a tenth below a minute: 0.42 -> "0.4s", 75 -> "1m 15s". */
export function formatDuration(seconds: number | null | undefined): string {
  if (typeof seconds === 'number' && isFinite(seconds) && seconds >= 0 && seconds < 60) {
    return `${seconds.toFixed(seconds < 10 ? 2 : 1)}s`;
  }
  return formatElapsed(seconds);
}

/** 512 -> "512 B", 2048 -> "2 kB", 3_500_000 -> "3.5 MB". */
export function formatBytes(n: number | null | undefined): string {
  if (n === null || n === undefined || !isFinite(n)) {
    return '—';
  }
  const units = ['B', 'kB', 'MB', 'GB', 'TB'];
  let value = n;
  let unit = 0;
  while (Math.abs(value) >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit++;
  }
  const digits = unit === 0 || Math.abs(value) >= 10 ? 0 : 1;
  return `${value.toFixed(digits).replace(/\.0$/, '')} ${units[unit]}`;
}

/** "1.2k tok · $0.12", with the subtree total in parentheses when it differs, the share of the
 * subtree's prompt tokens the provider served from its cache and what that saved
 * ("· 93% cached, saved $0.35"). */
export function formatUsage(s: Pick<Session, 'usage'>): string {
  const { own, subtree } = s.usage;
  let text = `${formatTokens(own.total_tokens)} tok · ${formatCost(own.cost)}`;
  if (subtree.total_tokens !== own.total_tokens || subtree.cost !== own.cost) {
    text += ` (Σ ${formatTokens(subtree.total_tokens)} · ${formatCost(subtree.cost)})`;
  }
  if (subtree.prompt_tokens && subtree.cached_tokens) {
    text += ` · ${Math.round((100 * subtree.cached_tokens) / subtree.prompt_tokens)}% cached`;
    // Nothing when it saved nothing (a first call to Claude writes its prompt to the cache
    // at a higher price; usage recorded before `uncached_cost` existed has none).
    const saved = (subtree.uncached_cost ?? 0) - subtree.cost;
    if (saved >= 5e-5) {
      text += `, saved ${formatCost(saved)}`;
    }
  }
  return text;
}

/** The first line of a text, cut to `max` characters. */
export function firstLine(text: unknown, max = 80): string {
  const s = String(text ?? '').trim().split('\n')[0];
  return s.length > max ? s.slice(0, max - 1) + '…' : s;
}

/** A clock time for an event timestamp (epoch seconds). */
export function clockTime(ts: number | string | null | undefined): string {
  const ms = toMillis(ts);
  return ms === null ? '' : new Date(ms).toLocaleTimeString();
}
