import { countModelCalls, GAP, LiveReply, modelDelta } from '../src/liveReply';
import { MODEL_DELTA_SCHEMA, SESSION_EVENT_SCHEMA, type ModelDelta } from '../src/protocol';
import { E } from './fixtures';

/** A delta of session `sa`'s call `call`. */
function D(call: number, seq: number, text: string, done = false, session = 'sa'): ModelDelta {
  return { session_id: session, root_id: session, call, seq, text, done };
}

describe('LiveReply', () => {
  let live: LiveReply;
  let changes: number;

  beforeEach(() => {
    jest.useFakeTimers();
    live = new LiveReply({ sessionId: 'sa', linger: 1000 });
    changes = 0;
    live.changed.connect(() => changes++);
  });

  afterEach(() => {
    live.dispose();
    jest.useRealTimers();
  });

  it('grows the reply from its deltas, one change each', () => {
    expect(live.current).toBeNull();
    expect(live.add(D(1, 1, 'Let me '))).toBe(true);
    expect(live.current).toEqual({ call: 1, text: 'Let me ', done: false });
    live.add(D(1, 2, 'compute'));
    live.add(D(1, 3, ' it.'));
    expect(live.current).toEqual({ call: 1, text: 'Let me compute it.', done: false });
    expect(changes).toBe(3);
  });

  it('puts pieces in seq order, whatever order they come in', () => {
    live.add(D(1, 2, 'b'));
    live.add(D(1, 4, 'd'));
    live.add(D(1, 1, 'a'));
    live.add(D(1, 3, 'c'));
    expect(live.current!.text).toBe('abcd');
  });

  it('ignores a duplicate delta', () => {
    live.add(D(1, 1, 'a'));
    live.add(D(1, 2, 'b'));
    expect(live.add(D(1, 2, 'b'))).toBe(false);
    expect(live.add(D(1, 1, 'a'))).toBe(false);
    expect(live.current!.text).toBe('ab');
    expect(changes).toBe(2);
  });

  it('shows what it has when a delta is missed, and marks the hole', () => {
    live.add(D(1, 1, 'one '));
    live.add(D(1, 3, 'three'));
    expect(live.current!.text).toBe(`one ${GAP}three`);
    // The missing one comes late after all: the hole closes.
    live.add(D(1, 2, 'two '));
    expect(live.current!.text).toBe('one two three');
  });

  it('marks a reply joined after its start (a view opened mid-call)', () => {
    live.add(D(2, 5, 'the rest'));
    expect(live.current).toEqual({ call: 2, text: `${GAP}the rest`, done: false });
  });

  it('shows nothing of a call with no text (only its last delta seen)', () => {
    live.add(D(4, 9, '', true));
    expect(live.current).toBeNull();
  });

  it("ignores other sessions' deltas", () => {
    expect(live.add(D(1, 1, 'not mine', false, 'sb'))).toBe(false);
    expect(live.current).toBeNull();
    expect(changes).toBe(0);
  });

  it('keeps an ended call until its stored event arrives, which replaces it', () => {
    live.add(D(1, 1, 'done here'));
    live.add(D(1, 2, '', true));
    expect(live.current).toEqual({ call: 1, text: 'done here', done: true });
    live.stored(1);
    expect(live.current).toBeNull();
    // A straggler of a stored call does not bring it back.
    expect(live.add(D(1, 1, 'done here'))).toBe(false);
    expect(live.current).toBeNull();
  });

  it('forgets an ended call whose stored event never comes (cancelled, failed)', () => {
    live.add(D(1, 1, 'half a rep'));
    live.add(D(1, 2, '', true));
    jest.advanceTimersByTime(999);
    expect(live.current).not.toBeNull();
    const before = changes;
    jest.advanceTimersByTime(1);
    expect(live.current).toBeNull();
    expect(changes).toBe(before + 1);
  });

  it('takes the next call with the number of a failed one (it was not stored) afresh', () => {
    live.add(D(1, 1, 'half a rep'));
    live.add(D(1, 2, '', true));
    live.add(D(1, 1, 'Again'));
    expect(live.current).toEqual({ call: 1, text: 'Again', done: false });
    // Its linger ended with it: the retry stays.
    jest.advanceTimersByTime(5000);
    expect(live.current!.text).toBe('Again');
    // After the linger too.
    live.add(D(1, 2, '', true));
    jest.advanceTimersByTime(1000);
    live.add(D(1, 1, 'Third'));
    expect(live.current).toEqual({ call: 1, text: 'Third', done: false });
  });

  it('clears a call stored before its last delta came (the done delta missed)', () => {
    live.add(D(3, 1, 'x'));
    live.stored(2);
    expect(live.current!.call).toBe(3);
    live.stored(3);
    expect(live.current).toBeNull();
    expect(live.add(D(3, 2, 'y'))).toBe(false);
  });

  it('follows the next call, and drops stragglers of the one before', () => {
    live.add(D(1, 1, 'first'));
    live.add(D(1, 2, '', true));
    live.add(D(2, 1, 'second'));
    expect(live.current).toEqual({ call: 2, text: 'second', done: false });
    expect(live.add(D(1, 1, 'first'))).toBe(false);
    // The first call's linger ended with it: the second stays.
    jest.advanceTimersByTime(5000);
    expect(live.current!.text).toBe('second');
    // Its stored event arrives late: the call being written stays.
    live.stored(1);
    expect(live.current!.text).toBe('second');
  });

  it('keeps memory bounded: the newest characters, a mark where text was dropped', () => {
    const small = new LiveReply({ sessionId: 'sa', maxChars: 10 });
    for (let seq = 1; seq <= 100; seq++) {
      small.add(D(1, seq, String(seq % 10).repeat(3)));
    }
    // ..., 97: '777', 98: '888', 99: '999', 100: '000'; the last 10 characters stay.
    expect(small.current!.text).toBe(`${GAP}7888999000`);
    small.dispose();
  });

  it('keeps a bounded number of separate runs when many deltas are missed', () => {
    const small = new LiveReply({ sessionId: 'sa', maxRuns: 3 });
    for (let seq = 1; seq <= 20; seq += 2) {
      small.add(D(1, seq, String.fromCharCode(96 + seq)));
    }
    // Only the newest 3 runs (seq 15, 17, 19) are kept.
    expect(small.current!.text).toBe(`${GAP}o${GAP}q${GAP}s`);
    small.dispose();
  });

  it('returns the same view until something changes', () => {
    live.add(D(1, 1, 'a'));
    const view = live.current;
    expect(live.current).toBe(view);
    live.add(D(1, 2, 'b'));
    expect(live.current).not.toBe(view);
  });

  it('takes nothing once disposed', () => {
    live.dispose();
    expect(live.add(D(1, 1, 'a'))).toBe(false);
    expect(live.current).toBeNull();
  });
});

describe('modelDelta and countModelCalls', () => {
  it('picks the deltas out of the event bus', () => {
    const delta = { schema_id: MODEL_DELTA_SCHEMA, ...D(1, 1, 'x') };
    expect(modelDelta(delta)).toBe(delta);
    expect(modelDelta({ schema_id: SESSION_EVENT_SCHEMA })).toBeNull();
  });

  it('counts the stored model calls of a trajectory', () => {
    const call = { model: 'm', usage: {}, cost: 0, duration: 1 };
    const events = [
      E('model_call', call, 1),
      E('assistant', { content: 'a' }, 2),
      E('model_call', { ...call, purpose: 'compaction' }, 3),
      E('observation', { text: '' }, 4)
    ];
    expect(countModelCalls(events)).toBe(2);
    expect(countModelCalls([])).toBe(0);
  });
});
