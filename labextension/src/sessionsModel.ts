/**
 * The session list of the panel, its views and other extensions (`IPrimeSessions`), kept up to
 * date without refetching it: a push event from jupyter_server's event bus patches the
 * session's state at once and asks for what changed since the last list
 * (`GET /api/prime/sessions?changed_after=<cursor>`, coalesced), which is merged in. A new
 * `epoch` (the daemon restarted, so old cursors mean nothing) fetches everything again; so does
 * `refresh()`. Without push events a slow poll asks for what changed. The pieces of a model reply
 * pushed while it streams are passed on as they come (`streamed`), changing nothing here.
 */
import type { Event } from '@jupyterlab/services';
import { ISignal, Signal } from '@lumino/signaling';

import { Coalescer } from './coalescer';
import { modelDelta } from './liveReply';
import type { CreateSession, ModelDelta, ModelList, Session, SessionNotification } from './protocol';
import { SessionIndex, sessionNotification } from './sessionIndex';
import type { IPrimeAPI, IPrimeSessions, ISessionsChange } from './tokens';

/** The User Timing measure of each update of the list: its main-thread cost, listeners included. */
export const UPDATE_MEASURE = 'prime-kernel:sessions-update';

export interface ISessionsModelOptions {
  api: IPrimeAPI;
  /** jupyter_server's event bus (`serviceManager.events`). */
  events?: Event.IManager;
  /** Seconds between polls when no push event comes (0: never). */
  pollInterval?: number;
  /** Milliseconds a fetch waits for more push events to fold in. */
  coalesce?: number;
}

export class SessionsModel implements IPrimeSessions {
  constructor(options: ISessionsModelOptions) {
    this._api = options.api;
    this._coalescer = new Coalescer(() => this._fetch(), options.coalesce ?? 300);
    if (options.events) {
      this._events = options.events;
      this._events.stream.connect(this._onEvent, this);
    }
    this.pollInterval = options.pollInterval ?? 10;
  }

  get changed(): ISignal<this, ISessionsChange> {
    return this._changed;
  }

  get notified(): ISignal<this, SessionNotification> {
    return this._notified;
  }

  get streamed(): ISignal<this, ModelDelta> {
    return this._streamed;
  }

  get sessions(): readonly Session[] {
    return this._index.values();
  }

  get loaded(): boolean {
    return this._loaded;
  }

  get error(): string | null {
    return this._error;
  }

  get isDisposed(): boolean {
    return this._disposed;
  }

  get pollInterval(): number {
    return this._pollInterval;
  }

  set pollInterval(seconds: number) {
    this._pollInterval = seconds;
    if (this._poll !== null) {
      clearInterval(this._poll);
      this._poll = null;
    }
    if (seconds > 0 && !this._disposed) {
      this._poll = setInterval(() => {
        if (typeof document === 'undefined' || document.visibilityState !== 'hidden') {
          void this._coalescer.request();
        }
      }, seconds * 1000);
    }
  }

  get(id: string): Session | undefined {
    return this._index.get(id);
  }

  children(id: string): Session[] {
    const out: Session[] = [];
    for (const c of this._index.childIds(id)) {
      out.push(this._index.get(c)!);
    }
    return out;
  }

  refresh(): Promise<void> {
    this._full = true;
    return this._coalescer.flush();
  }

  requestUpdate(): Promise<void> {
    return this._coalescer.request();
  }

  async fetch(id: string): Promise<Session> {
    const session = await this._api.getSession(id);
    this._apply(() => this._index.merge([session]), 'record');
    return session;
  }

  async create(body: CreateSession): Promise<Session> {
    const session = await this._api.createSession(body);
    this._error = null;
    this._apply(() => this._index.merge([session]), 'record');
    return session;
  }

  models(): Promise<ModelList> {
    if (!this._models) {
      this._models = this._api.models().catch(err => {
        this._models = null;
        throw err;
      });
    }
    return this._models;
  }

  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    this._events?.stream.disconnect(this._onEvent, this);
    if (this._poll !== null) {
      clearInterval(this._poll);
    }
    this._coalescer.dispose();
    Signal.clearData(this);
  }

  private _onEvent(_: unknown, e: Event.Emission): void {
    const note = sessionNotification(e);
    if (!note) {
      const delta = modelDelta(e);
      if (delta) {
        this._streamed.emit(delta);
      }
      return;
    }
    if (this._index.get(note.session_id)) {
      this._apply(() => (this._index.patchState(note.session_id, note.state) ? new Set([note.session_id]) : EMPTY), 'push');
    }
    this._notified.emit(note);
    // Any event may change the record (usage, answer, kernel, children): ask what changed.
    void this._coalescer.request();
  }

  private async _fetch(): Promise<void> {
    const delta = !this._full && this._cursor !== null;
    try {
      let list = await this._api.listSessions(delta ? { changed_after: this._cursor! } : {});
      let all = !delta;
      if (delta && list.epoch !== this._epoch) {
        // The daemon restarted: cursors of the old run mean nothing now.
        list = await this._api.listSessions();
        all = true;
      }
      this._full = false;
      this._cursor = list.cursor;
      this._epoch = list.epoch;
      this._error = null;
      this._loaded = true;
      if (this._disposed) {
        return;
      }
      if (all) {
        this._apply(() => {
          this._index.reset(list.sessions);
          return null;
        }, 'list');
      } else {
        this._apply(() => this._index.merge(list.sessions), 'changes');
      }
    } catch (err) {
      const error = (err as Error).message || String(err);
      const first = !this._loaded;
      this._loaded = true;
      if (error !== this._error || first) {
        this._error = error;
        this._apply(() => null, 'error');
      }
    }
  }

  /**
   * Change the index and tell the listeners; null from `change` means everything changed. The
   * whole step is one User Timing measure, listeners (the panel's render) included.
   */
  private _apply(change: () => ReadonlySet<string> | null, source: string): void {
    const start = performance.now();
    const ids = change();
    if (ids !== null && !ids.size) {
      return;
    }
    this._changed.emit(ids === null ? { ids: EMPTY, all: true } : { ids, all: false });
    performance.measure(UPDATE_MEASURE, {
      start,
      end: performance.now(),
      detail: { source, changed: ids === null ? this._index.size : ids.size, total: this._index.size }
    });
  }

  private _api: IPrimeAPI;
  private _index = new SessionIndex();
  private _cursor: number | null = null;
  private _epoch: string | null = null;
  private _full = false;
  private _error: string | null = null;
  private _loaded = false;
  private _disposed = false;
  private _models: Promise<ModelList> | null = null;
  private _coalescer: Coalescer;
  private _events: Event.IManager | null = null;
  private _pollInterval = 0;
  private _poll: ReturnType<typeof setInterval> | null = null;
  private _changed = new Signal<this, ISessionsChange>(this);
  private _notified = new Signal<this, SessionNotification>(this);
  private _streamed = new Signal<this, ModelDelta>(this);
}

const EMPTY: ReadonlySet<string> = new Set();
