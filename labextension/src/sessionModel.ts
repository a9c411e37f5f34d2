/**
 * One session as its view shows it: its record (from `IPrimeSessions`, with its goal), its
 * trajectory, fetched after the last event seen whenever a push event of the session arrives
 * (coalesced), and its schedules, fetched again when one of them changes or ticks; with a slow
 * poll while it runs; and the reply its model is writing (`live`), from the deltas pushed while a
 * call streams, until the trajectory stores that call. The view only renders what this model
 * holds and asks it to act.
 */
import { ISignal, Signal } from '@lumino/signaling';

import { Coalescer } from './coalescer';
import { countModelCalls, LiveReply } from './liveReply';
import { sortSchedules } from './longrun';
import type {
  CreateSchedule,
  ModelDelta,
  Schedule,
  Session,
  SessionNotification,
  TrajectoryEvent,
  Verification
} from './protocol';
import { lastSeq } from './sessionIndex';
import { isTerminal } from './states';
import type { IPrimeAPI, IPrimeSessions, ISessionModel, ISessionsChange } from './tokens';

export interface ISessionModelOptions {
  id: string;
  sessions: IPrimeSessions;
  api: IPrimeAPI;
  /** Milliseconds a fetch waits for more push events to fold in. */
  coalesce?: number;
  /** Milliseconds a streamed reply stays shown after its last delta, waiting for its stored event. */
  linger?: number;
}

export class SessionModel implements ISessionModel {
  constructor(options: ISessionModelOptions) {
    this.id = options.id;
    this._sessions = options.sessions;
    this._api = options.api;
    this._coalescer = new Coalescer(() => this._fetchEvents(), options.coalesce ?? 250);
    this._scheduleFetcher = new Coalescer(() => this._fetchSchedules(), options.coalesce ?? 250);
    this._sessions.changed.connect(this._onSessionsChanged, this);
    this._sessions.notified.connect(this._onNotified, this);
    this.live = new LiveReply({ sessionId: this.id, linger: options.linger });
    this._sessions.streamed.connect(this._onStreamed, this);
    this._schedulePoll();
    if (!this.session) {
      void this._sessions.fetch(this.id).catch(err => this._setError((err as Error).message));
    }
    void this._coalescer.flush();
    void this._scheduleFetcher.flush();
  }

  readonly id: string;

  /** The reply its model is writing now (streamed, not yet in `events`). */
  readonly live: LiveReply;

  /** The session's record, once known. */
  get session(): Session | undefined {
    return this._sessions.get(this.id);
  }

  /** The trajectory so far, by seq. */
  get events(): readonly TrajectoryEvent[] {
    return this._events;
  }

  /** The schedules it owns or that tick to it: active ones first, soonest tick first. */
  get schedules(): readonly Schedule[] {
    return this._schedules;
  }

  /** The message of the last failed fetch (the record, the trajectory or the schedules), or null. */
  get error(): string | null {
    return this._error;
  }

  /** New events, in seq order. */
  get added(): ISignal<this, readonly TrajectoryEvent[]> {
    return this._added;
  }

  /** The record, the schedules or the error changed. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  get isDisposed(): boolean {
    return this._disposed;
  }

  /** Fetch the record, new events and the schedules now. */
  async refresh(): Promise<void> {
    await Promise.all([
      this._sessions.fetch(this.id).catch(() => undefined),
      this._coalescer.flush(),
      this._scheduleFetcher.flush()
    ]);
  }

  /** Message the agent (as the user). */
  /** Mark the answer right or wrong; the record (with what was learned) is fetched again. */
  async verify(correct: boolean, note = ''): Promise<Verification> {
    const v = await this._api.verify(this.id, note ? { correct, note } : { correct });
    await this._sessions.fetch(this.id);
    return v;
  }

  async send(message: string): Promise<void> {
    await this._api.sendMessage(this.id, message);
  }

  /** Give the session a new goal (as the user); the record is read again, so it shows at once. */
  async setGoal(text: string): Promise<void> {
    await this._api.setGoal(this.id, { text });
    await this._sessions.fetch(this.id);
  }

  /** Clear the session's goal (as the user). */
  async clearGoal(): Promise<void> {
    await this._api.clearGoal(this.id);
    await this._sessions.fetch(this.id);
  }

  /**
   * Make a schedule to this session (as the user); the list takes the schedule's record from
   * the reply. Throws with the daemon's message when it refuses (a cron that does not parse).
   */
  async addSchedule(schedule: Omit<CreateSchedule, 'session_id'>): Promise<void> {
    const made = await this._api.createSchedule({ ...schedule, session_id: this.id });
    if (!this._disposed) {
      this._setSchedules([made, ...this._schedules.filter(s => s.id !== made.id)]);
    }
  }

  /** Cancel one of its schedules; the list takes the schedule's record from the reply. */
  async cancelSchedule(scheduleId: string): Promise<void> {
    const cancelled = await this._api.cancelSchedule(scheduleId);
    if (!this._disposed) {
      this._setSchedules(this._schedules.map(s => (s.id === cancelled.id ? cancelled : s)));
    }
  }

  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    if (this._poll !== null) {
      clearTimeout(this._poll);
    }
    this._coalescer.dispose();
    this._scheduleFetcher.dispose();
    this._sessions.changed.disconnect(this._onSessionsChanged, this);
    this._sessions.notified.disconnect(this._onNotified, this);
    this._sessions.streamed.disconnect(this._onStreamed, this);
    this.live.dispose();
    Signal.clearData(this);
  }

  private _onSessionsChanged(_: unknown, change: ISessionsChange): void {
    if (change.all || change.ids.has(this.id)) {
      this._changed.emit();
    }
  }

  private _onNotified(_: unknown, note: SessionNotification): void {
    if (note.session_id === this.id) {
      void this._coalescer.request();
      // A schedule was made, cancelled or ended, or skipped a tick; or a message came in,
      // which may be a tick (its count and next time changed).
      if (note.kind === 'schedule' || note.kind === 'mail_in') {
        void this._scheduleFetcher.request();
      }
    }
  }

  private _onStreamed(_: unknown, delta: ModelDelta): void {
    this.live.add(delta);
  }

  /**
   * Poll every 10 s while the session may still change (push events can be missed), and the
   * schedules while one is active: the ticks of a schedule it owns go to another session.
   */
  private _schedulePoll(): void {
    this._poll = setTimeout(() => {
      const s = this.session;
      if (!s || !isTerminal(s.state)) {
        void this._coalescer.request();
      }
      if (this._schedules.some(x => x.state === 'active')) {
        void this._scheduleFetcher.request();
      }
      if (!this._disposed) {
        this._schedulePoll();
      }
    }, 10_000);
  }

  private async _fetchEvents(): Promise<void> {
    let incoming: TrajectoryEvent[];
    try {
      incoming = await this._api.events(this.id, lastSeq(this._events));
    } catch (err) {
      this._setError((err as Error).message);
      return;
    }
    if (this._disposed) {
      return;
    }
    const last = lastSeq(this._events);
    const fresh = incoming.filter(e => e.seq > last).sort((a, b) => a.seq - b.seq);
    if (this._error !== null) {
      this._setError(null);
    }
    if (fresh.length) {
      this._events = [...this._events, ...fresh];
      this._modelCalls += countModelCalls(fresh);
      // The stored events take the place of the streamed reply in the same step: the view
      // draws them, then drops the live block, with no frame showing both or neither.
      this._added.emit(fresh);
      this.live.stored(this._modelCalls);
    }
  }

  private async _fetchSchedules(): Promise<void> {
    let schedules: Schedule[];
    try {
      schedules = await this._api.schedules({ session: this.id });
    } catch (err) {
      this._setError((err as Error).message);
      return;
    }
    if (!this._disposed) {
      this._setSchedules(schedules);
    }
  }

  private _setSchedules(schedules: Schedule[]): void {
    this._schedules = sortSchedules(schedules);
    this._changed.emit();
  }

  private _setError(error: string | null): void {
    this._error = error;
    this._changed.emit();
  }

  private _sessions: IPrimeSessions;
  private _api: IPrimeAPI;
  private _events: TrajectoryEvent[] = [];
  /** How many `model_call` events `_events` holds. */
  private _modelCalls = 0;
  private _error: string | null = null;
  private _schedules: Schedule[] = [];
  private _coalescer: Coalescer;
  private _scheduleFetcher: Coalescer;
  private _poll: ReturnType<typeof setTimeout> | null = null;
  private _disposed = false;
  private _added = new Signal<this, readonly TrajectoryEvent[]>(this);
  private _changed = new Signal<this, void>(this);
}
