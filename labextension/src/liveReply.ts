/**
 * The reply a session's model is writing now, from the `ModelDelta`s that jupyter_server's event
 * bus pushes while a call streams. Deltas are never stored: the stored `model_call` event (with
 * the `assistant` event beside it) is the reply of record, and replaces what is shown here. So
 * this shows what it has — pieces in `seq` order, a missed one marked, duplicates dropped — and
 * forgets a call once it is stored, or soon after its last delta (`done`) when it never is (a
 * cancelled or failed call). `call` is the number of model calls the session had stored when
 * it began, plus one, so the trajectory's n-th `model_call` event is call n. Pure (node-tested: labextension/test/liveReply.spec.ts).
 */
import { ISignal, Signal } from '@lumino/signaling';

import { MODEL_DELTA_SCHEMA, type ModelDelta, type TrajectoryEvent } from './protocol';
import type { ILiveCall, ILiveReply } from './tokens';

/** A push event of the model-delta schema, from jupyter_server's event bus; null for others. */
export function modelDelta(e: { schema_id: string }): ModelDelta | null {
  return e.schema_id === MODEL_DELTA_SCHEMA ? (e as unknown as ModelDelta) : null;
}

/**
 * How many model calls these trajectory events store. `call` numbers a session's model calls
 * from 1, and each call stores one `model_call` event, so the n-th such event ends call n.
 */
export function countModelCalls(events: readonly TrajectoryEvent[]): number {
  let n = 0;
  for (const e of events) {
    if (e.kind === 'model_call') {
      n++;
    }
  }
  return n;
}

/** Shown where pieces are missing: a delta that was not received, or text dropped for memory. */
export const GAP = '…';

export interface ILiveReplyOptions {
  sessionId: string;
  /** Characters kept per call; beyond, the oldest text is dropped (the newest is what is read). */
  maxChars?: number;
  /** Separate runs of pieces kept per call (each gap between received deltas starts one). */
  maxRuns?: number;
  /** Milliseconds an ended call stays shown while its stored event is on its way. */
  linger?: number;
}

export class LiveReply implements ILiveReply {
  constructor(options: ILiveReplyOptions) {
    this.sessionId = options.sessionId;
    this._maxChars = options.maxChars ?? 100_000;
    this._maxRuns = options.maxRuns ?? 64;
    this._linger = options.linger ?? 3000;
  }

  readonly sessionId: string;

  /** The call being shown: the newest one not yet stored (and not expired) with text, or null. */
  get current(): ILiveCall | null {
    const c = this._call;
    if (!c || !c.chars) {
      return null;
    }
    if (c.view === null) {
      c.view = { call: c.call, text: render(c), done: c.done };
    }
    return c.view;
  }

  /** The call shown began, grew, ended or went away. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  get isDisposed(): boolean {
    return this._disposed;
  }

  /** Take a pushed delta (other sessions' and stored calls' are ignored); whether it showed. */
  add(delta: ModelDelta): boolean {
    if (this._disposed || delta.session_id !== this.sessionId || delta.call <= this._stored) {
      return false;
    }
    let c = this._call;
    if (c && delta.call < c.call) {
      return false; // a straggler of a call already followed by another
    }
    // After a call's last delta, more of the same number are a new call: one that failed was
    // not stored, so the next one has its number (and nothing of a call comes after its last
    // delta: one websocket carries them in order).
    if (!c || delta.call > c.call || c.done) {
      c = this._call = { call: delta.call, runs: [], chars: 0, dropped: false, done: false, view: null };
      this._clearTimer();
    }
    const grew = insert(c, delta.seq, delta.text);
    if (grew) {
      this._trim(c);
    }
    if (delta.done) {
      c.done = true;
      this._timer = setTimeout(() => this._drop(c!), this._linger);
    } else if (!grew) {
      return false;
    }
    c.view = null;
    this._changed.emit();
    return true;
  }

  /** The trajectory stores `count` model calls: those are over, whatever deltas still come. */
  stored(count: number): void {
    if (count <= this._stored) {
      return;
    }
    this._stored = count;
    if (this._call && this._call.call <= count) {
      this._drop(this._call);
    }
  }

  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    this._clearTimer();
    this._call = null;
    Signal.clearData(this);
  }

  private _drop(c: ICall): void {
    if (this._call !== c) {
      return;
    }
    this._clearTimer();
    this._call = null;
    this._changed.emit();
  }

  private _clearTimer(): void {
    if (this._timer !== null) {
      clearTimeout(this._timer);
      this._timer = null;
    }
  }

  /** Keep the newest `maxChars` characters in at most `maxRuns` runs. */
  private _trim(c: ICall): void {
    while (c.runs.length > this._maxRuns) {
      c.chars -= c.runs.shift()!.text.length;
      c.dropped = true;
    }
    while (c.chars > this._maxChars) {
      const first = c.runs[0];
      const excess = c.chars - this._maxChars;
      if (first.text.length <= excess && c.runs.length > 1) {
        c.runs.shift();
        c.chars -= first.text.length;
      } else {
        first.text = first.text.slice(excess);
        c.chars -= excess;
      }
      c.dropped = true;
    }
  }

  private _call: ICall | null = null;
  /** How many of the session's model calls the trajectory has stored. */
  private _stored = 0;
  private _timer: ReturnType<typeof setTimeout> | null = null;
  private _disposed = false;
  private readonly _maxChars: number;
  private readonly _maxRuns: number;
  private readonly _linger: number;
  private _changed = new Signal<this, void>(this);
}

/** Consecutive deltas `first`..`last` of a call, their texts joined. */
interface IRun {
  first: number;
  last: number;
  text: string;
}

interface ICall {
  call: number;
  /** By seq, never touching: a gap lies between two runs. */
  runs: IRun[];
  chars: number;
  /** Whether text was dropped to keep within the limits. */
  dropped: boolean;
  done: boolean;
  /** What `current` returns, until the next change. */
  view: ILiveCall | null;
}

/** Put a delta's text in its place; false for a duplicate (its seq was received already). */
function insert(c: ICall, seq: number, text: string): boolean {
  const runs = c.runs;
  // Deltas mostly come in order: look from the end.
  let i = runs.length;
  while (i > 0 && runs[i - 1].first > seq) {
    i--;
  }
  const prev = i > 0 ? runs[i - 1] : null;
  if (prev && prev.last >= seq) {
    return false;
  }
  const next = i < runs.length ? runs[i] : null;
  if (prev && prev.last === seq - 1) {
    prev.last = seq;
    prev.text += text;
    if (next && next.first === seq + 1) {
      prev.last = next.last;
      prev.text += next.text;
      runs.splice(i, 1);
    }
  } else if (next && next.first === seq + 1) {
    next.first = seq;
    next.text = text + next.text;
  } else {
    runs.splice(i, 0, { first: seq, last: seq, text });
  }
  c.chars += text.length;
  return true;
}

/** The text shown: the runs in order, a gap mark where deltas are missing or were dropped. */
function render(c: ICall): string {
  const parts: string[] = [];
  let expected = 1;
  for (const run of c.runs) {
    if (run.first !== expected || (parts.length === 0 && c.dropped)) {
      parts.push(GAP);
    }
    parts.push(run.text);
    expected = run.last + 1;
  }
  return parts.join('');
}
