// The scripted test models (prime_kernel/models/scripted.py): playwright.config.js writes them
// to a JSON file and points the server's PRIME_SCRIPTS at it.
const refinement = {
  summary: 'Write down how to check work before answering',
  rationale: 'The root agent answered without checking its child result.',
  expected_outcome: 'Agents verify sub-agent results before answering.',
  edits: [
    {
      op: 'create',
      kind: 'note',
      id: 'check-results',
      title: 'Check results',
      content: 'Before answering, check what sub-agents returned.',
      reason: 'the root trusted its child blindly'
    },
    {
      op: 'create',
      kind: 'memory',
      id: 'doubling',
      title: 'Doubling 21',
      content: '21 doubled is 42.',
      reason: 'a fact the child computed'
    }
  ]
};

module.exports = {
  'ui-root': {
    turns: [
      { text: 'Let me **compute** it.', code: "x = 6 * 7\nprint('x is', x)\nx" },
      { code: "h = rlm('child: double 21', model='scripted/ui-child')\nr = h.result(timeout=60)\nr" },
      { code: 'answer(x)' }
    ]
  },
  'ui-child': { turns: [{ code: 'answer(21 * 2)' }] },
  // An agent that fails the same way three times, then gives up with no answer: its view shows
  // the traceback once and folds the repeats.
  'ui-fail': {
    turns: [
      { code: "import json\njson.loads('{bad')" },
      { code: "import json\njson.loads('{bad')" },
      { code: "import json\njson.loads('{bad')" },
      { text: '' }
    ]
  },
  'ui-slow': {
    turns: [{ code: "ready = 'yes'\nready" }, { text: 'thinking for a long time', sleep: 600 }]
  },
  'ui-refine': { turns: [{ text: JSON.stringify(refinement) }] },
  // A model that thinks for 3 s (the test opens the view meanwhile), then streams its reply in
  // six pieces 0.8 s apart: the session view shows it growing before the call ends.
  'ui-stream': {
    turns: [
      {
        sleep: 3,
        text: 'Reading the task. Six times seven: 6 * 7 is 42, which I check in the REPL before answering.',
        pieces: [
          'Reading the task. ',
          'Six times seven: ',
          '6 * 7 is 42, ',
          'which I check ',
          'in the REPL ',
          'before answering.'
        ],
        piece_delay: 0.8,
        code: 'answer(6 * 7)'
      }
    ]
  },
  // What a notebook's llm() call gets back.
  'ui-hello': { turns: [{ text: 'Hello from the scripted model.' }] },
  // An agent that sets a goal, notes progress on it and makes an hourly heartbeat, then answers:
  // the heartbeat keeps it waiting (IDLE) instead of ending DONE. Woken by a tick later, it
  // replies that its script has no more turns.
  'ui-goal': {
    turns: [
      {
        code: "goal.set('Keep the build green')\ngoal.progress('wrote the first test')\nbeat = schedule.every('1h', 'hourly check')\nbeat['id']"
      },
      { code: "answer('watching')" }
    ]
  },
  // An autonomous agent started from the form: each continuation answers; its gate fails the
  // first time (the second continuation plays the second turn) and passes the next.
  'ui-auto': { turns: [{ code: "answer('first try')" }, { code: "answer('second try')" }] },
  // A persistent agent that asks for a compaction as it answers: it goes IDLE, is passivated
  // (snapshot) after c.Daemon.idle_timeout, and a message revives it (restore), whereupon the
  // requested compaction runs before its next model call. The summary call is answered by
  // the first turn (its text reads as a summary); after the compaction the turns replay from
  // the messages kept, and end with an answer again.
  'ui-persist': {
    turns: [
      { text: 'The agent set x = 6 * 7 = 42 in its REPL.', code: "x = 6 * 7\nprint('x is', x)" },
      { code: 'compact()\nanswer(x)' }
    ]
  }
};
