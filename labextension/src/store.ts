/**
 * AgentsStore: the client-side cache of sessions shared by the Agents panel
 * and the session views. Refetches (coalesced) on push events from the
 * jupyter_server event bus, with a slow fallback poll.
 */
import { Event } from '@jupyterlab/services';
import { IDisposable } from '@lumino/disposable';
import { ISignal, Signal } from '@lumino/signaling';

import { PrimeAPI } from './api';
import {
  applyEmission,
  Coalescer,
  IModels,
  INewSession,
  isSessionEmission,
  ISession,
  ISessionEmission,
  mergeSessions
} from './model';

export class AgentsStore implements IDisposable {
  constructor(
    readonly api: PrimeAPI,
    options: { events?: Event.IManager; pollInterval?: number } = {}
  ) {
    this._coalescer = new Coalescer(() => this._fetch(), 300);
    if (options.events) {
      this._events = options.events;
      this._events.stream.connect(this._onEmission, this);
    }
    const interval = options.pollInterval ?? 10_000;
    if (interval > 0) {
      this._poll = setInterval(() => {
        if (typeof document === 'undefined' || document.visibilityState !== 'hidden') {
          void this._coalescer.request();
        }
      }, interval);
    }
  }

  /** Emitted when the session list, error or availability changes. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** Emitted for every push event of our schema (after the local state patch). */
  get emission(): ISignal<this, ISessionEmission> {
    return this._emission;
  }

  get sessions(): ISession[] {
    return this._sessions;
  }

  /** The last fetch error, or null. */
  get error(): string | null {
    return this._error;
  }

  /** Whether at least one fetch has completed (ok or not). */
  get loaded(): boolean {
    return this._loaded;
  }

  get isDisposed(): boolean {
    return this._disposed;
  }

  get(id: string): ISession | undefined {
    return this._sessions.find(s => s.id === id);
  }

  /** Refetch the list now (coalesced with any refetch in flight). */
  refresh(): Promise<void> {
    return this._coalescer.flush();
  }

  /** Ask for a refetch soon (coalesced). */
  requestRefresh(): Promise<void> {
    return this._coalescer.request();
  }

  async models(): Promise<IModels> {
    if (!this._models) {
      this._models = this.api.models().catch(err => {
        this._models = null;
        throw err;
      });
    }
    return this._models;
  }

  /** Whether GET /api/prime/harness answers (checked once). */
  async harnessAvailable(): Promise<boolean> {
    if (this._harness === null) {
      this._harness = this.api.harnessAvailable();
    }
    return this._harness;
  }

  /** Start a new root agent; it is in `sessions` as soon as this resolves. */
  async create(body: INewSession): Promise<ISession> {
    const session = await this.api.createSession(body);
    this._sessions = mergeSessions(this._sessions, [session]);
    this._error = null;
    this._changed.emit();
    void this._coalescer.request();
    return session;
  }

  /** Merge sessions fetched elsewhere (e.g. a session view) into the cache. */
  upsert(sessions: ISession[]): void {
    this._sessions = mergeSessions(this._sessions, sessions);
    this._changed.emit();
  }

  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    this._events?.stream.disconnect(this._onEmission, this);
    if (this._poll !== null) {
      clearInterval(this._poll);
    }
    this._coalescer.dispose();
    Signal.clearData(this);
  }

  private _onEmission(_: unknown, e: Event.Emission): void {
    if (!isSessionEmission(e)) {
      return;
    }
    const patched = applyEmission(this._sessions, e);
    if (patched !== this._sessions) {
      this._sessions = patched;
      this._changed.emit();
    }
    this._emission.emit(e);
    const known = !!e.session_id && this._sessions.some(s => s.id === e.session_id);
    // A new session, a state change or new usage: refetch (coalesced).
    if (!known || e.kind === 'state' || e.kind === 'model_call' || e.kind === 'child' || e.kind === 'answer' || e.kind === 'cell' || e.kind === 'task') {
      void this._coalescer.request();
    }
  }

  private async _fetch(): Promise<void> {
    try {
      const sessions = await this.api.listSessions();
      this._sessions = sessions;
      this._error = null;
    } catch (err) {
      this._error = (err as Error).message || String(err);
    }
    this._loaded = true;
    if (!this._disposed) {
      this._changed.emit();
    }
  }

  private _sessions: ISession[] = [];
  private _error: string | null = null;
  private _loaded = false;
  private _disposed = false;
  private _models: Promise<IModels> | null = null;
  private _harness: Promise<boolean> | null = null;
  private _coalescer: Coalescer;
  private _events: Event.IManager | null = null;
  private _poll: ReturnType<typeof setInterval> | null = null;
  private _changed = new Signal<this, void>(this);
  private _emission = new Signal<this, ISessionEmission>(this);
}
