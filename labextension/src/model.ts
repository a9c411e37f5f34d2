/**
 * Pure model logic for the Agents panel: the JSON types of docs/architecture.md,
 * tree building, filtering, flattening for a virtualised list, formatting and
 * merging of updates. No DOM and no JupyterLab imports, so it is unit tested
 * in node (labextension/test/model.spec.ts).
 */

/** Schema id of the session events the daemon emits on jupyter_server's event bus. */
export const SESSION_EVENT_SCHEMA =
  'https://events.prime-kernel.dev/prime_kernel/session/v1';

export type SessionState =
  | 'ADMITTED'
  | 'RUNNING'
  | 'IDLE'
  | 'INACTIVE'
  | 'DONE'
  | 'FAILED'
  | 'CANCELLED';

export const ALL_STATES: SessionState[] = [
  'ADMITTED',
  'RUNNING',
  'IDLE',
  'INACTIVE',
  'DONE',
  'FAILED',
  'CANCELLED'
];

export const TERMINAL_STATES: ReadonlySet<string> = new Set([
  'DONE',
  'FAILED',
  'CANCELLED'
]);

/** Whether a session in this state has ended for good. */
export function isTerminal(state: string): boolean {
  return TERMINAL_STATES.has(state);
}

export interface IUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  cached_tokens?: number;
  total_tokens?: number;
  cost?: number;
  model_calls?: number;
  cells?: number;
  wall_time?: number;
  kernel_time?: number;
}

export interface ISession {
  id: string;
  name?: string | null;
  prompt?: string | null;
  model?: string | null;
  state: SessionState | string;
  parent_id?: string | null;
  root_id?: string | null;
  depth?: number;
  kind?: 'agent' | 'notebook' | string;
  notebook_path?: string | null;
  kernel_id?: string | null;
  /** Epoch seconds (the daemon's time.time()) or an ISO string. */
  created?: string | number | null;
  started?: string | number | null;
  ended?: string | number | null;
  error?: string | null;
  answer_repr?: string | null;
  usage?: { own?: IUsage; subtree?: IUsage } | null;
  budget?: Record<string, unknown> | null;
  /** Whether the session's kernel is still up (a console can attach to it). */
  kernel_alive?: boolean;
  /** The type of the `context` input the agent was given, if any. */
  context_type?: string | null;
  [key: string]: unknown;
}

export interface IEvent {
  seq: number;
  session_id: string;
  ts?: number | string | null;
  kind: string;
  data: any;
}

/** A push event from the jupyter_server event bus (our schema). */
export interface ISessionEmission {
  schema_id: string;
  session_id?: string;
  kind?: string;
  state?: string;
  seq?: number;
}

export interface IModels {
  default: string;
  models: string[];
}

/** Body of POST /api/prime/sessions. */
export interface INewSession {
  prompt: string;
  model?: string;
  name?: string;
  budget?: IBudget;
  max_turns?: number;
}

/**
 * The budget the UI sends, in the daemon's keys (prime_kernel/daemon/budget.py):
 * each caps the session's subtree (tokens, dollars, model calls) or its wall time.
 */
export interface IBudget {
  tokens?: number;
  dollars?: number;
  seconds?: number;
  turns?: number;
}

/** What the user typed into the New agent form's budget fields (empty: no limit). */
export interface IBudgetInput {
  tokens?: string;
  dollars?: string;
  seconds?: string;
  turns?: string;
}

/** Whether an event-bus emission is one of ours. */
export function isSessionEmission(e: unknown): e is ISessionEmission {
  return (
    !!e &&
    typeof e === 'object' &&
    (e as { schema_id?: unknown }).schema_id === SESSION_EVENT_SCHEMA
  );
}

// ---------------------------------------------------------------------------
// Labels and time
// ---------------------------------------------------------------------------

/** A display label: the session name, or the first words of its prompt. */
export function sessionLabel(s: ISession, maxWords = 8): string {
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
export function elapsedSeconds(s: ISession, nowMs: number = Date.now()): number | null {
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

// ---------------------------------------------------------------------------
// Formatting
// ---------------------------------------------------------------------------

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

/** "1.2k tok · $0.12", with the subtree total in parentheses when it differs. */
export function formatUsage(s: ISession): string {
  const own = s.usage?.own || {};
  const sub = s.usage?.subtree || {};
  let text = `${formatTokens(own.total_tokens ?? 0)} tok · ${formatCost(own.cost ?? 0)}`;
  const subTokens = sub.total_tokens ?? 0;
  const subCost = sub.cost ?? 0;
  if (subTokens !== (own.total_tokens ?? 0) || subCost !== (own.cost ?? 0)) {
    text += ` (Σ ${formatTokens(subTokens)} · ${formatCost(subCost)})`;
  }
  return text;
}

// ---------------------------------------------------------------------------
// Tree
// ---------------------------------------------------------------------------

export interface ITreeNode {
  session: ISession;
  children: ITreeNode[];
  depth: number;
}

function createdKey(s: ISession): number {
  return toMillis(s.created) ?? 0;
}

/**
 * Build the session forest from a flat list. Roots are sessions without a
 * parent, or whose parent is not in the list (orphans). Roots are sorted
 * newest first; children oldest first (spawn order). Cycles are broken.
 */
export function buildTree(sessions: ISession[]): ITreeNode[] {
  const byId = new Map<string, ISession>();
  for (const s of sessions) {
    byId.set(s.id, s);
  }
  const childrenOf = new Map<string, ISession[]>();
  const roots: ISession[] = [];
  for (const s of byId.values()) {
    const pid = s.parent_id;
    if (pid && pid !== s.id && byId.has(pid)) {
      let list = childrenOf.get(pid);
      if (!list) {
        list = [];
        childrenOf.set(pid, list);
      }
      list.push(s);
    } else {
      roots.push(s);
    }
  }
  const seen = new Set<string>();
  const build = (s: ISession, depth: number): ITreeNode => {
    seen.add(s.id);
    const kids = (childrenOf.get(s.id) || [])
      .filter(c => !seen.has(c.id))
      .sort((a, b) => createdKey(a) - createdKey(b) || a.id.localeCompare(b.id));
    return { session: s, depth, children: kids.map(c => build(c, depth + 1)) };
  };
  roots.sort((a, b) => createdKey(b) - createdKey(a) || a.id.localeCompare(b.id));
  const forest = roots.map(r => build(r, 0));
  // Sessions caught in a parent cycle are reachable from no root: show them as roots.
  for (const s of byId.values()) {
    if (!seen.has(s.id)) {
      forest.push(build(s, 0));
    }
  }
  return forest;
}

export interface IFilter {
  /** States to show; empty means all. */
  states?: ReadonlySet<string>;
  /** Case-insensitive text matched against name, prompt, id and model. */
  text?: string;
}

/** Whether a single session matches the filter (ignoring its relatives). */
export function matchesFilter(s: ISession, filter: IFilter): boolean {
  if (filter.states && filter.states.size && !filter.states.has(s.state)) {
    return false;
  }
  const text = (filter.text || '').trim().toLowerCase();
  if (text) {
    const hay = [s.name, s.prompt, s.id, s.model].filter(Boolean).join('\n').toLowerCase();
    if (!hay.includes(text)) {
      return false;
    }
  }
  return true;
}

export interface IFilteredNode extends ITreeNode {
  children: IFilteredNode[];
  /** False for an ancestor kept only to give context to a matching descendant. */
  matches: boolean;
}

/**
 * Filter a forest: keep nodes that match, plus their ancestors (marked
 * `matches: false`) so the hierarchy stays visible.
 */
export function filterTree(forest: ITreeNode[], filter: IFilter): IFilteredNode[] {
  const walk = (n: ITreeNode): IFilteredNode | null => {
    const kids = n.children.map(walk).filter((c): c is IFilteredNode => c !== null);
    const matches = matchesFilter(n.session, filter);
    if (!matches && !kids.length) {
      return null;
    }
    return { session: n.session, depth: n.depth, children: kids, matches };
  };
  return forest.map(walk).filter((n): n is IFilteredNode => n !== null);
}

export interface IRow {
  session: ISession;
  depth: number;
  hasChildren: boolean;
  collapsed: boolean;
  matches: boolean;
  /** Number of descendants (all levels) in the (filtered) tree. */
  descendants: number;
}

function countDescendants(n: ITreeNode): number {
  return n.children.reduce((acc, c) => acc + 1 + countDescendants(c), 0);
}

/** Depth-first list of the rows to display, skipping children of collapsed nodes. */
export function flattenTree(
  forest: ITreeNode[],
  collapsed: ReadonlySet<string> = new Set()
): IRow[] {
  const rows: IRow[] = [];
  const walk = (n: ITreeNode) => {
    const isCollapsed = collapsed.has(n.session.id) && n.children.length > 0;
    rows.push({
      session: n.session,
      depth: n.depth,
      hasChildren: n.children.length > 0,
      collapsed: isCollapsed,
      matches: (n as IFilteredNode).matches ?? true,
      descendants: countDescendants(n)
    });
    if (!isCollapsed) {
      n.children.forEach(walk);
    }
  };
  forest.forEach(walk);
  return rows;
}

/** Count sessions per state (all states present, zero if none). */
export function countByState(sessions: ISession[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const st of ALL_STATES) {
    counts[st] = 0;
  }
  for (const s of sessions) {
    counts[s.state] = (counts[s.state] || 0) + 1;
  }
  return counts;
}

/**
 * Window of rows to render for a virtualised list with fixed row height:
 * [start, end) indices, including `overscan` rows on either side.
 */
export function visibleRange(
  total: number,
  scrollTop: number,
  viewportHeight: number,
  rowHeight: number,
  overscan = 5
): { start: number; end: number } {
  if (total <= 0 || rowHeight <= 0) {
    return { start: 0, end: 0 };
  }
  const first = Math.floor(Math.max(0, scrollTop) / rowHeight);
  const count = Math.ceil(Math.max(0, viewportHeight) / rowHeight) + 1;
  const start = Math.max(0, Math.min(total - 1, first) - overscan);
  const end = Math.min(total, first + count + overscan);
  return { start, end: Math.max(start, end) };
}

// ---------------------------------------------------------------------------
// Merging updates
// ---------------------------------------------------------------------------

/**
 * Merge updated sessions into a list: replaces by id, appends new ones,
 * keeps order of the existing list. Returns a new array.
 */
export function mergeSessions(existing: ISession[], updates: ISession[]): ISession[] {
  const upd = new Map<string, ISession>();
  for (const u of updates) {
    upd.set(u.id, u);
  }
  const out = existing.map(s => {
    const u = upd.get(s.id);
    if (u) {
      upd.delete(s.id);
      return { ...s, ...u };
    }
    return s;
  });
  for (const u of upd.values()) {
    out.push(u);
  }
  return out;
}

/**
 * Apply a push event to a session list without a refetch: updates the state
 * of a known session. Returns the same array if nothing changed.
 */
export function applyEmission(sessions: ISession[], e: ISessionEmission): ISession[] {
  if (!e.session_id || !e.state) {
    return sessions;
  }
  const idx = sessions.findIndex(s => s.id === e.session_id);
  if (idx < 0 || sessions[idx].state === e.state) {
    return sessions;
  }
  const out = sessions.slice();
  out[idx] = { ...sessions[idx], state: e.state };
  return out;
}

/** Merge event pages: dedupe by seq, sorted by seq. Returns a new array. */
export function mergeEvents(existing: IEvent[], incoming: IEvent[]): IEvent[] {
  const bySeq = new Map<number, IEvent>();
  for (const e of existing) {
    bySeq.set(e.seq, e);
  }
  for (const e of incoming) {
    bySeq.set(e.seq, e);
  }
  return Array.from(bySeq.values()).sort((a, b) => a.seq - b.seq);
}

/** The highest seq in a list of events (0 if empty). */
export function lastSeq(events: IEvent[]): number {
  return events.reduce((m, e) => Math.max(m, e.seq), 0);
}

/** Whether a session id is in the subtree rooted at rootId. */
export function isInSubtree(sessions: ISession[], rootId: string, id: string): boolean {
  const byId = new Map(sessions.map(s => [s.id, s]));
  let cur = byId.get(id);
  const seen = new Set<string>();
  while (cur && !seen.has(cur.id)) {
    if (cur.id === rootId) {
      return true;
    }
    seen.add(cur.id);
    cur = cur.parent_id ? byId.get(cur.parent_id) : undefined;
  }
  return false;
}

/** A positive count with an optional k/M suffix ("50k", "1.5M", "200,000"); null if empty. */
function parseCount(raw: string, what: string, example: string): number | null {
  const t = raw.trim().replace(/[_,\s]/g, '');
  if (!t) {
    return null;
  }
  const m = /^(\d+(?:\.\d+)?)([kKmM]?)$/.exec(t);
  if (!m) {
    throw new Error(`${what} must be a positive number (e.g. ${example}), got "${raw}"`);
  }
  const mult = { '': 1, k: 1e3, K: 1e3, m: 1e6, M: 1e6 }[m[2]] as number;
  const value = Math.round(parseFloat(m[1]) * mult);
  if (value <= 0) {
    throw new Error(`${what} must be positive`);
  }
  return value;
}

/** Seconds from "90", "90s", "10m", "1.5h"; null if empty. */
function parseDuration(raw: string): number | null {
  const t = raw.trim().toLowerCase().replace(/\s+/g, '');
  if (!t) {
    return null;
  }
  const m = /^(\d+(?:\.\d+)?)(s|m|min|h)?$/.exec(t);
  if (!m) {
    throw new Error(`Time limit must be seconds or a duration like 90s, 10m, 1.5h, got "${raw}"`);
  }
  const mult = m[2] === 'h' ? 3600 : m[2] === 'm' || m[2] === 'min' ? 60 : 1;
  const value = parseFloat(m[1]) * mult;
  if (value <= 0) {
    throw new Error('Time limit must be positive');
  }
  return value;
}

/**
 * Parse the "New agent" budget inputs into the daemon's budget keys. Empty
 * strings mean "no limit"; undefined when no limit is set at all.
 * Throws an Error with a user-facing message for invalid input.
 */
export function parseBudget(input: IBudgetInput): IBudget | undefined {
  const budget: IBudget = {};
  const tokens = parseCount(input.tokens ?? '', 'Token budget', '50000 or 50k');
  if (tokens !== null) {
    budget.tokens = tokens;
  }
  const d = (input.dollars ?? '').trim().replace(/^\$/, '');
  if (d) {
    const value = Number(d);
    if (!isFinite(value) || value <= 0) {
      throw new Error(`Dollar budget must be a positive number, got "${input.dollars}"`);
    }
    budget.dollars = value;
  }
  const seconds = parseDuration(input.seconds ?? '');
  if (seconds !== null) {
    budget.seconds = seconds;
  }
  const turns = parseCount(input.turns ?? '', 'Turn budget', '30');
  if (turns !== null) {
    budget.turns = turns;
  }
  return Object.keys(budget).length ? budget : undefined;
}

/** "tokens 50k, dollars $0.50, seconds 10m 00s, turns 30" for a session's budget. */
export function formatBudget(budget: Record<string, unknown> | null | undefined): string {
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
      parts.push(`${k} ${formatCost(n)}`);
    } else if (k === 'tokens') {
      parts.push(`${k} ${formatTokens(n)}`);
    } else if (k === 'seconds') {
      parts.push(`time ${formatElapsed(n)}`);
    } else {
      parts.push(`${k} ${String(v)}`);
    }
  }
  return parts.join(', ');
}

// ---------------------------------------------------------------------------
// Export as notebook
// ---------------------------------------------------------------------------

/** A file-name-safe slug: "Fix the CSV loader!" -> "fix-the-csv-loader". */
export function slug(text: string, max = 40): string {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, max)
    .replace(/-+$/, '');
}

/** The base name of an export: the session's name as a slug, else its id. */
export function exportBaseName(s: ISession): string {
  return (s.name && slug(s.name)) || s.id;
}

/** The export dialog's options a session offers: its sub-agents, its context input. */
export interface IExportChoices {
  subtree: boolean;
  withContext: boolean;
}

export function exportChoices(s: ISession, sessions: ISession[]): IExportChoices {
  return { subtree: sessions.some(c => c.parent_id === s.id), withContext: !!s.context_type };
}

/** Body of POST /api/prime/sessions/{id}/export. */
export interface IExportRequest {
  path: string;
  subtree: boolean;
  force: boolean;
  with_context: boolean;
}

/** Answer of POST /api/prime/sessions/{id}/export (paths relative to the server root). */
export interface IExportResult {
  session_id: string;
  path: string;
  files: string[];
}

/**
 * The n-th path to try for an export at the server root (0: `<base>.ipynb`,
 * then `<base>-1.ipynb`, ...). A subtree export is a folder (`<base>`, `<base>-1`, ...).
 */
export function exportPath(base: string, subtree: boolean, attempt: number): string {
  const name = attempt ? `${base}-${attempt}` : base;
  return subtree ? name : `${name}.ipynb`;
}

/** The notebook to open after an export: the session's own one (a subtree folder holds several). */
export function exportedNotebook(result: IExportResult, sessionId: string): string {
  const own = result.files.find(
    f => f === `${sessionId}.ipynb` || f.endsWith(`/${sessionId}.ipynb`)
  );
  return own || result.path;
}

// ---------------------------------------------------------------------------
// Coalescing refreshes
// ---------------------------------------------------------------------------

/**
 * Runs an async task at most once per `wait` ms no matter how often it is
 * requested (trailing edge), never concurrently: a request that arrives while
 * the task runs schedules one more run afterwards. Avoids refetch storms when
 * many push events arrive, without starving like a plain debounce would.
 */
export class Coalescer {
  constructor(
    private readonly task: () => Promise<unknown>,
    readonly wait = 300
  ) {}

  /** Ask for a run; resolves when a run that started after this call has finished. */
  request(): Promise<void> {
    if (this._disposed) {
      return Promise.resolve();
    }
    if (!this._pending) {
      this._pending = new Promise<void>(resolve => {
        this._resolvePending = resolve;
      });
      if (!this._running) {
        this._schedule();
      }
    }
    return this._pending;
  }

  /** Run now (still never concurrently). */
  flush(): Promise<void> {
    const p = this.request();
    if (this._timer !== null && !this._running) {
      clearTimeout(this._timer);
      this._timer = null;
      void this._run();
    }
    return p;
  }

  get isRunning(): boolean {
    return this._running;
  }

  dispose(): void {
    this._disposed = true;
    if (this._timer !== null) {
      clearTimeout(this._timer);
      this._timer = null;
    }
    this._resolvePending?.();
    this._pending = null;
  }

  private _schedule(): void {
    this._timer = setTimeout(() => {
      this._timer = null;
      void this._run();
    }, this.wait);
  }

  private async _run(): Promise<void> {
    if (this._disposed) {
      return;
    }
    const resolve = this._resolvePending;
    this._pending = null;
    this._resolvePending = null;
    this._running = true;
    try {
      await this.task();
    } catch {
      // The task reports its own errors.
    } finally {
      this._running = false;
      resolve?.();
      if (this._pending && !this._disposed) {
        this._schedule();
      }
    }
  }

  private _timer: ReturnType<typeof setTimeout> | null = null;
  private _pending: Promise<void> | null = null;
  private _resolvePending: (() => void) | null = null;
  private _running = false;
  private _disposed = false;
}

// ---------------------------------------------------------------------------
// Trajectory helpers
// ---------------------------------------------------------------------------

/** A one-line summary of an event, for titles and tests. */
export function summarizeEvent(e: IEvent): string {
  const d = e.data || {};
  switch (e.kind) {
    case 'state':
      return `state → ${d.state}${d.reason ? ` (${d.reason})` : ''}`;
    case 'task':
      return `task: ${firstLine(d.prompt)}`;
    case 'model_call':
      return `model call ${d.model ?? ''}: ${formatTokens(d.usage?.total_tokens)} tok, ${formatCost(d.cost)}`;
    case 'assistant':
      return `assistant: ${firstLine(d.content)}`;
    case 'cell':
      return `${d.source === 'user' ? 'user ' : ''}cell [${d.execution_count ?? ' '}] ${d.status ?? ''}`.trim();
    case 'observation':
      return `observation: ${firstLine(d.text)}`;
    case 'child':
      return `spawned ${d.name || d.child_id}`;
    case 'mail_in':
      return `mail from ${d.from}: ${firstLine(d.message)}`;
    case 'mail_out':
      return `mail to ${d.to}: ${firstLine(d.message)}`;
    case 'answer':
      return `${d.kind === 'reply' ? 'reply' : 'answer'}: ${firstLine(d.repr)}`;
    case 'error':
      return `error: ${firstLine(d.message)}`;
    default:
      return e.kind;
  }
}

function firstLine(text: unknown, max = 80): string {
  const s = String(text ?? '').trim().split('\n')[0];
  return s.length > max ? s.slice(0, max - 1) + '…' : s;
}

// ---------------------------------------------------------------------------
// Console on a session's kernel
// ---------------------------------------------------------------------------

export const KERNEL_GONE = "the session's kernel has been shut down";

/** Whether "Open console" can attach to the session's kernel, and why not. */
export function consoleAvailability(s: ISession): { enabled: boolean; reason: string } {
  if (!s.kernel_id) {
    return { enabled: false, reason: 'the session has no kernel' };
  }
  if (s.kernel_alive === false) {
    return { enabled: false, reason: KERNEL_GONE };
  }
  return { enabled: true, reason: '' };
}
