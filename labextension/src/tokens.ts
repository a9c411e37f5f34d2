/**
 * The services the extension's plugins provide, for each other and for other extensions: e.g.
 * consume `IPrimeSessions` to act on sessions, `IPrimeAgentsPanel` to add a column to the
 * session rows, `IPrimeEventRenderers` to render a trajectory event kind differently.
 */
import type { IWidgetTracker, MainAreaWidget } from '@jupyterlab/apputils';
import { Token } from '@lumino/coreutils';
import type { IDisposable } from '@lumino/disposable';
import type { ISignal } from '@lumino/signaling';
import type { Widget } from '@lumino/widgets';

import type { PrimeAPI } from './api';
import type { IBudgetInput } from './budget';
import type { HarnessModel } from './harnessModel';
import type { CreateSession, ModelList, Session, SessionNotification } from './protocol';
import type { EventRendererRegistry } from './renderers';
import type { SessionView } from './session';

/** The REST client of /api/prime. */
export type IPrimeAPI = Pick<PrimeAPI, keyof PrimeAPI>;
export const IPrimeAPI = new Token<IPrimeAPI>(
  'prime-kernel:IPrimeAPI',
  'The REST client of the prime_kernel daemon (/api/prime).'
);

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

/** The renderers of trajectory events, one per event kind. */
export type IPrimeEventRenderers = EventRendererRegistry;
export const IPrimeEventRenderers = new Token<IPrimeEventRenderers>(
  'prime-kernel:IPrimeEventRenderers',
  'The DOM renderer of each trajectory event kind; set one to change how a kind is shown.'
);

/** The open session views. */
export interface IPrimeSessionViews {
  readonly tracker: IWidgetTracker<MainAreaWidget<SessionView>>;
  /** Open (or show) a session's view. */
  open(id: string): MainAreaWidget<SessionView>;
}
export const IPrimeSessionViews = new Token<IPrimeSessionViews>(
  'prime-kernel:IPrimeSessionViews',
  'The main-area views of agent sessions (trajectory, usage, messages).'
);

/** The harness (notes, memories, skills, specs) and its refinements. */
export type IPrimeHarness = HarnessModel;
export const IPrimeHarness = new Token<IPrimeHarness>(
  'prime-kernel:IPrimeHarness',
  'The Continual Harness of the prime_kernel daemon: entries, history, refinements.'
);
