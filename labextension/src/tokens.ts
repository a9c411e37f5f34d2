/**
 * The services the extension's plugins provide, for each other and for other extensions: e.g.
 * consume `IPrimeSessions` to act on sessions, `IPrimeAgentsPanel` to add a column to the
 * session rows, `IPrimeEventRenderers` to render a trajectory event kind differently.
 *
 * Every contract here is an interface, with the JSON shapes it passes that the protocol does
 * not generate; the classes that provide them implement these. So this module imports only
 * external packages and the generated `protocol.ts` (which imports nothing): another
 * extension's code depends on these interfaces, never on how a class is built, and no module
 * of ours can make an import circle through here (labextension/test/imports.spec.ts).
 */
import type { IWidgetTracker, MainAreaWidget } from '@jupyterlab/apputils';
import type { ServerConnection } from '@jupyterlab/services';
import type { TranslationBundle } from '@jupyterlab/translation';
import { Token } from '@lumino/coreutils';
import type { IDisposable } from '@lumino/disposable';
import type { ISignal } from '@lumino/signaling';
import type { Panel, Widget } from '@lumino/widgets';

import type {
  CancelResult,
  CreateSchedule,
  CreateSession,
  EventDataMap,
  EventKind,
  ExportRequest,
  ExportResult,
  Goal,
  GoalChange,
  HarnessKind,
  ModelDelta,
  ModelList,
  Schedule,
  Session,
  SessionFilter,
  SessionList,
  SessionNotification,
  TrajectoryEvent,
  Verification,
  VerifyRequest
} from './protocol';

// ---------------------------------------------------------------------------------------------
// The REST client
// ---------------------------------------------------------------------------------------------

/** The REST client of /api/prime (docs/reference.md); its errors are `PrimeAPIError`s. */
/** What a refinement under way has done so far, for a status line. */
export interface IRefineProgress {
  model: string;
  trigger: string;
  started: number;
  seconds: number;
  chars: number;
  /** "reading" the prompt, then "writing" the reply (streamed). */
  phase: 'reading' | 'writing';
}

export interface IPrimeAPI {
  /** The server connection every request goes through (auth token, XSRF). */
  readonly settings: ServerConnection.ISettings;
  /** The URL of /api/prime/<parts> (each part encoded). */
  url(...parts: string[]): string;
  /** A request to /api/prime/<path><q>: the reply's JSON, or a `PrimeAPIError`. */
  request<T>(path: string[], init?: RequestInit, q?: string): Promise<T>;

  /** GET /api/prime/status: how agent kernels are confined here. */
  status(): Promise<IServerStatus>;
  /** POST /api/prime/capability: a token that lets `kernelId` start agents. */
  capability(kernelId: string): Promise<{ url: string; token: string }>;

  /**
   * The sessions, newest first, with a `cursor` and the daemon run's `epoch`; with
   * `changed_after` (an earlier cursor of the same epoch) only those changed since.
   */
  listSessions(filter?: SessionFilter): Promise<SessionList>;
  getSession(id: string): Promise<Session>;
  createSession(body: CreateSession): Promise<Session>;
  cancelSession(id: string): Promise<CancelResult>;
  /** The session's trajectory after seq `after`. */
  events(id: string, after?: number): Promise<TrajectoryEvent[]>;
  sendMessage(id: string, message: string): Promise<unknown>;
  interrupt(id: string): Promise<unknown>;
  /** Set the session's goal (`text`), note progress, or mark it done, as the user. */
  setGoal(id: string, change: GoalChange): Promise<Goal>;
  /** Clear the session's goal; false if it had none. */
  clearGoal(id: string): Promise<boolean>;
  /** Schedules, newest first: with `session`, those owned by it or ticking to it. */
  schedules(filters?: { session?: string; state?: Schedule['state'] }): Promise<Schedule[]>;
  /** Make a person's schedule to a session; its record. */
  createSchedule(body: CreateSchedule): Promise<Schedule>;
  /** Cancel a schedule (a person may cancel any); its record as it is now. */
  cancelSchedule(scheduleId: string): Promise<Schedule>;
  models(): Promise<ModelList>;
  /**
   * Write the session's trajectory as a notebook (or, with `subtree`, a folder of linked
   * notebooks) under the server root.
   */
  exportNotebook(id: string, body: ExportRequest): Promise<ExportResult>;

  harness(): Promise<IHarnessListing>;
  /** Create an entry (author "user"); 409 if it exists in that scope. */
  harnessCreate(body: INewEntry): Promise<IHarnessEntry>;
  harnessEntry(kind: string, id: string): Promise<IHarnessEntry>;
  /** Change an entry (author "user"); 409 if `base_version` is no longer its version. */
  harnessUpdate(kind: string, id: string, body: IEntryUpdate): Promise<IHarnessEntry>;
  harnessHistory(kind: string, id: string): Promise<IHarnessVersion[]>;
  /** A version with its files before and after (file name -> text, or null). */
  harnessVersion(kind: string, id: string, version: number): Promise<IVersionFiles>;
  /** The unified diff of an entry between versions `a` and `b` (default: the latest). */
  harnessDiff(kind: string, id: string, a: number, b?: number): Promise<string>;
  harnessRollback(kind: string, id: string, version: number, reason: string): Promise<IHarnessVersion>;
  /** Run a refinement (one model call); from a session's trajectory when given. */
  refine(body: IRefineRequest): Promise<IRefinement>;
  refinements(limit?: number): Promise<IRefinement[]>;
  /** Approve or reject some edits of a refinement (all pending ones without `edits`), or roll it back. */
  reviewRefinement(rid: string, action: ReviewAction, edits?: number[]): Promise<IRefinement>;
  /** The refinements under way (a status line's figures). */
  refineProgress(): Promise<IRefineProgress[]>;
  /** Say whether a session's answer is right; the harness learns from it. */
  verify(id: string, body: VerifyRequest): Promise<Verification>;
}
export const IPrimeAPI = new Token<IPrimeAPI>(
  'prime-kernel:IPrimeAPI',
  'The REST client of the prime_kernel daemon (/api/prime).'
);

/** How agent kernels are confined (`GET /api/prime/status`). */
export interface ISandboxStatus {
  mode: string;
  reason?: string;
  bwrap?: string | null;
  network?: boolean;
  protects: string[];
  exposes: string[];
}

/** GET /api/prime/status. */
export interface IServerStatus {
  version: string;
  sandbox: ISandboxStatus;
}

// The JSON shapes of the harness routes (docs/reference.md).

export type HarnessScope = 'project' | 'global';

export interface IHarnessEntry {
  kind: HarnessKind | string;
  id: string;
  title?: string;
  summary?: string;
  scope: HarnessScope | string;
  version?: number;
  metadata?: Record<string, unknown>;
  /** Relative to the scope's root, e.g. "notes/x.md" or "skills/y/SKILL.md". */
  path: string;
  /** Absolute path (GET of one entry only). */
  file?: string;
  content?: string;
  files?: Record<string, string>;
}

/** A harness file that could not be read as an entry. */
export interface IHarnessError {
  kind?: string;
  id?: string;
  scope?: string;
  error?: string;
  message: string;
  path?: string;
  line?: number;
}

/** GET /api/prime/harness. */
export interface IHarnessListing {
  entries: IHarnessEntry[];
  errors: IHarnessError[];
  policy: string;
  roots: Partial<Record<HarnessScope, string>>;
}

export interface IHarnessVersion {
  kind: string;
  id: string;
  scope: string;
  version: number;
  op: 'create' | 'update' | 'delete' | 'rollback' | string;
  author: string;
  reason?: string;
  evidence?: { session_id: string; turn?: number }[];
  refinement_id?: string | null;
  ts: number | string;
  hash?: string;
}

/** One edit a refinement proposes. */
export interface IHarnessEdit {
  index: number;
  op: 'create' | 'update' | 'delete' | string;
  kind: string;
  id: string;
  title?: string;
  content?: string;
  metadata?: Record<string, unknown>;
  files?: Record<string, string>;
  reason?: string;
  evidence?: { session_id: string; turn?: number }[];
  status: 'pending' | 'applied' | 'rejected' | 'refused' | 'failed' | string;
  flags?: string[];
  note?: string;
  base_version?: number | null;
}

/** A version with its files before and after it (file name -> text; null: none). */
export interface IVersionFiles extends IHarnessVersion {
  before: Record<string, string> | null;
  after: Record<string, string> | null;
}

export interface IRefinement {
  id: string;
  created?: number | string;
  updated?: number | string;
  author?: string;
  trigger?: string;
  instructions?: string | null;
  status: string;
  summary?: string;
  rationale?: string;
  expected_outcome?: string;
  evidence?: string[];
  edits: IHarnessEdit[];
  error?: string | null;
  model?: string;
  rolled_back?: { by: string; ts: number | string; entries: unknown } | null;
}

/** Body of POST /api/prime/harness/refine: from a session's trajectory, with instructions. */
export interface IRefineRequest {
  session_id?: string;
  instructions?: string;
}

/** What a person may do with a refinement's edits. */
export type ReviewAction = 'approve' | 'reject' | 'rollback';

/** Body of PUT /api/prime/harness/{kind}/{id}. */
export interface IEntryUpdate {
  title?: string;
  content?: string;
  metadata?: Record<string, unknown>;
  base_version?: number;
  scope: string;
  reason: string;
}

/** Body of POST /api/prime/harness. */
export interface INewEntry {
  kind: HarnessKind;
  id: string;
  title?: string;
  content?: string;
  metadata?: Record<string, unknown>;
  scope: HarnessScope;
  reason: string;
}

// ---------------------------------------------------------------------------------------------
// The sessions
// ---------------------------------------------------------------------------------------------

/** What changed in the session list: these ids, or (`all`) everything. */
export interface ISessionsChange {
  readonly ids: ReadonlySet<string>;
  readonly all: boolean;
}

/** The sessions the daemon knows, kept up to date from its push events. */
export interface IPrimeSessions extends IDisposable {
  /** Every session (the array is replaced, never changed, when something changes). */
  readonly sessions: readonly Session[];
  get(id: string): Session | undefined;
  /** The known children of a session. */
  children(id: string): Session[];
  /** Whether a list has been fetched (or failed) once. */
  readonly loaded: boolean;
  /** The last fetch error, or null. */
  readonly error: string | null;
  /** Emitted after the list changed. */
  readonly changed: ISignal<IPrimeSessions, ISessionsChange>;
  /** Every push notification of a session event, after the list took its state. */
  readonly notified: ISignal<IPrimeSessions, SessionNotification>;
  /** Every piece of a model reply pushed while it streams (never stored; see `ILiveReply`). */
  readonly streamed: ISignal<IPrimeSessions, ModelDelta>;
  /** Seconds between fetches of what changed when no push event came (0: never). */
  pollInterval: number;
  /** Fetch the whole list now. */
  refresh(): Promise<void>;
  /** Fetch what changed, soon (coalesced with other requests). */
  requestUpdate(): Promise<void>;
  /** Fetch one session's record now (and keep it). */
  fetch(id: string): Promise<Session>;
  /** Start a root agent; it is in `sessions` when this resolves. */
  create(body: CreateSession): Promise<Session>;
  /** The default model and the known ones (fetched once). */
  models(): Promise<ModelList>;
}
export const IPrimeSessions = new Token<IPrimeSessions>(
  'prime-kernel:IPrimeSessions',
  'The agent sessions of the prime_kernel daemon, updated live.'
);

// ---------------------------------------------------------------------------------------------
// The settings
// ---------------------------------------------------------------------------------------------

/** What the user typed into the budget fields (empty: no limit). */
export interface IBudgetInput {
  tokens?: string;
  dollars?: string;
  seconds?: string;
  turns?: string;
}

/** The extension's settings (schema: labextension/schema/settings.json). */
export interface IPrimeSettings {
  /** Seconds between polls when no push event comes (0: never). */
  readonly refreshInterval: number;
  /** The model the New agent form starts with ("" for the server's default). */
  readonly defaultModel: string;
  /** The budget the New agent form starts with. */
  readonly defaultBudget: IBudgetInput;
  /** Whether cancelling an agent asks first. */
  readonly confirmBeforeCancel: boolean;
  readonly changed: ISignal<IPrimeSettings, void>;
}
export const IPrimeSettings = new Token<IPrimeSettings>(
  'prime-kernel:IPrimeSettings',
  'The settings of the Agents panel.'
);

// ---------------------------------------------------------------------------------------------
// The Agents panel
// ---------------------------------------------------------------------------------------------

/** A column of the session rows: text (or a node) for a session, shown in its meta line. */
export interface IAgentsColumn {
  /** Unique among columns; also the CSS class suffix `jp-PrimeAgents-col-<id>`. */
  id: string;
  /** Lower first. The built-in columns are model (10), tokens (20) and cost (30). */
  rank: number;
  /** A tooltip. */
  title?: string;
  render(session: Session): string | HTMLElement | null;
}

/** The Agents side panel. */
export interface IPrimeAgentsPanel {
  readonly widget: Widget;
  /** Add a column to every row; disposing the result removes it. */
  addColumn(column: IAgentsColumn): IDisposable;
  /** Add an item to the panel's toolbar. */
  addToolbarItem(name: string, item: Widget): void;
  /** Show (or hide) the New agent form. */
  showForm(show?: boolean): void;
}
export const IPrimeAgentsPanel = new Token<IPrimeAgentsPanel>(
  'prime-kernel:IPrimeAgentsPanel',
  'The Agents side panel: add a column to its rows or an item to its toolbar.'
);

// ---------------------------------------------------------------------------------------------
// The renderers of trajectory events
// ---------------------------------------------------------------------------------------------

/** What a renderer may use beyond its event. */
export interface IRenderContext {
  trans: TranslationBundle;
  /** Markdown, untrusted (rendered by JupyterLab's rendermime in the app). */
  markdown(text: string): Widget;
  /** Python source, highlighted. */
  code(source: string): Widget;
  /** A cell's nbformat outputs, untrusted. */
  outputs(outputs: EventDataMap['cell']['outputs']): Widget;
  /** Open a session's view. */
  openSession(id: string): void;
  /** Show a refinement in the Harness view. */
  openRefinement(id: string): void;
}

/** An event as its renderer lays it out. */
export interface IRenderedEvent {
  /** The head line; none for an event with nothing to show (e.g. a model turn of code only). */
  head: (Node | string | null)[];
  body?: (HTMLElement | Widget | null)[];
  /** Classes of the item beside `jp-PrimeEvent jp-PrimeEvent-<kind>`, e.g. `jp-mod-user`. */
  classes?: string[];
}

/** How one event kind is shown. */
export interface IEventRenderer<K extends EventKind = EventKind> {
  /** One line of plain text (the item's tooltip, what a reader skims). */
  summary(data: EventDataMap[K], trans: TranslationBundle): string;
  render(event: TrajectoryEvent<K>, ctx: IRenderContext): IRenderedEvent;
}

/** The renderers of trajectory events, one per event kind. */
export interface IPrimeEventRenderers {
  /** The kinds with a renderer. */
  kinds(): string[];
  get<K extends EventKind>(kind: K): IEventRenderer<K> | undefined;
  /** Render `kind` with `renderer` until the result is disposed (the previous one comes back). */
  set<K extends EventKind>(kind: K, renderer: IEventRenderer<K>): IDisposable;
  /** The one-line summary of an event (its kind, when no renderer knows it). */
  summary(event: TrajectoryEvent, trans: TranslationBundle): string;
  /** The item an event is shown as: `.jp-PrimeEvent.jp-PrimeEvent-<kind>` with its head and body. */
  render(event: TrajectoryEvent, ctx: IRenderContext): Panel;
}
export const IPrimeEventRenderers = new Token<IPrimeEventRenderers>(
  'prime-kernel:IPrimeEventRenderers',
  'The DOM renderer of each trajectory event kind; set one to change how a kind is shown.'
);

// ---------------------------------------------------------------------------------------------
// The session views
// ---------------------------------------------------------------------------------------------

/** The model call a session is streaming, as far as its pushed deltas tell. */
export interface ILiveCall {
  /** Which of the session's model calls (from 1). */
  readonly call: number;
  /** The reply so far; `…` marks deltas missed (or dropped, beyond the memory limit). */
  readonly text: string;
  /** Whether its last delta came: its stored event is on its way. */
  readonly done: boolean;
}

/**
 * The reply a session's model is writing, from its pushed deltas, until the trajectory stores
 * that model call (the stored events replace it).
 */
export interface ILiveReply extends IDisposable {
  readonly sessionId: string;
  /** The call being written (or just ended, its stored event on its way), or null. */
  readonly current: ILiveCall | null;
  /** `current` began, grew, ended or went away. */
  readonly changed: ISignal<ILiveReply, void>;
  /** Take a pushed delta (another session's is ignored); whether `current` changed. */
  add(delta: ModelDelta): boolean;
  /** The trajectory stores `count` model calls: calls up to `count` are over. */
  stored(count: number): void;
}

/** One session as its view shows it: its record, trajectory and schedules, and its actions. */
export interface ISessionModel extends IDisposable {
  readonly id: string;
  /** The session's record, once known. */
  readonly session: Session | undefined;
  /** The trajectory so far, by seq. */
  readonly events: readonly TrajectoryEvent[];
  /** The schedules it owns or that tick to it: active ones first, soonest tick first. */
  readonly schedules: readonly Schedule[];
  /** The message of the last failed fetch (the record, the trajectory or the schedules), or null. */
  readonly error: string | null;
  /** New events, in seq order. */
  readonly added: ISignal<ISessionModel, readonly TrajectoryEvent[]>;
  /** The reply its model is writing now (streamed, not yet in `events`). */
  readonly live: ILiveReply;
  /** The record, the schedules or the error changed. */
  readonly changed: ISignal<ISessionModel, void>;
  /** Fetch the record, new events and the schedules now. */
  refresh(): Promise<void>;
  /** Message the agent (as the user). */
  send(message: string): Promise<void>;
  /** Give the session a new goal (as the user). */
  setGoal(text: string): Promise<void>;
  /** Clear the session's goal (as the user). */
  clearGoal(): Promise<void>;
  /** Make a schedule to this session (as the user). */
  addSchedule(schedule: Omit<CreateSchedule, 'session_id'>): Promise<void>;
  /** Cancel one of its schedules. */
  cancelSchedule(scheduleId: string): Promise<void>;
  /** Say whether its answer is right (as the user); the harness learns from it. */
  verify(correct: boolean, note?: string): Promise<Verification>;
}

/** The main-area view of one session (the content of its `MainAreaWidget`). */
export interface ISessionView extends Panel {
  readonly model: ISessionModel;
  readonly sessionId: string;
  /** Send what is typed in the view's message box. */
  sendMessage(): Promise<void>;
}

/** The open session views. */
export interface IPrimeSessionViews {
  readonly tracker: IWidgetTracker<MainAreaWidget<ISessionView>>;
  /** Open (or show) a session's view. */
  open(id: string): MainAreaWidget<ISessionView>;
}
export const IPrimeSessionViews = new Token<IPrimeSessionViews>(
  'prime-kernel:IPrimeSessionViews',
  'The main-area views of agent sessions (trajectory, usage, messages).'
);

// ---------------------------------------------------------------------------------------------
// The harness
// ---------------------------------------------------------------------------------------------

/** An entry of the harness by kind and id. */
export interface IEntryRef {
  kind: string;
  id: string;
}

/** What the New entry dialog collects; metadata as JSON text. */
export interface INewEntryDraft {
  kind: HarnessKind;
  id: string;
  title: string;
  content: string;
  metadata: string;
  scope: HarnessScope;
}

/** The harness (notes, memories, skills, sub-agents) and its refinements. */
export interface IPrimeHarness extends IDisposable {
  readonly api: IPrimeAPI;
  /** Entries, broken files, the review policy and the scopes' roots (after the last refresh). */
  readonly listing: IHarnessListing | null;
  /** Refinements, newest first as the server gives them. */
  readonly refinements: readonly IRefinement[];
  readonly selected: IEntryRef | null;
  /** The selected entry (with its content and files) and its versions, once loaded. */
  readonly entry: IHarnessEntry | null;
  readonly versions: readonly IHarnessVersion[];
  /** Emitted when the listing, the refinements or the selected entry changed. */
  readonly changed: ISignal<IPrimeHarness, void>;
  /** Whether the daemon serves the harness (GET /api/prime/harness answers; asked once). */
  available(): Promise<boolean>;
  /** Reload entries and refinements, and the selected entry (deselected if it is gone). */
  refresh(): Promise<void>;
  /** Load an entry and its history (throws if it cannot be loaded; the selection stays). */
  select(kind: string, id: string): Promise<void>;
  /** Create an entry from the New entry dialog's draft and select it. */
  create(draft: INewEntryDraft): Promise<IHarnessEntry>;
  /** The latest version of an entry. */
  latest(kind: string, id: string): Promise<IHarnessEntry>;
  /** Save an edit (409 if someone changed the entry since `base_version`). */
  update(kind: string, id: string, body: IEntryUpdate): Promise<IHarnessEntry>;
  /** The diff a version's "Diff" shows (against the version before it); null for the first. */
  diff(version: number): Promise<{ pair: [number, number]; diff: string } | null>;
  /** The selected entry's version with its files before and after. */
  version(version: number): Promise<IVersionFiles | null>;
  /** Roll the selected entry back to `version`. */
  rollback(version: number, reason: string): Promise<IHarnessVersion | null>;
  /** Run a refinement (one model call), optionally from a session's trajectory. */
  refine(options?: IRefineRequest): Promise<IRefinement>;
  /** Approve or reject one edit of a refinement (or all pending ones), or roll it back. */
  review(rid: string, action: ReviewAction, edit?: number): Promise<IRefinement>;
}
export const IPrimeHarness = new Token<IPrimeHarness>(
  'prime-kernel:IPrimeHarness',
  'The Continual Harness of the prime_kernel daemon: entries, history, refinements.'
);
