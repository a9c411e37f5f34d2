/** Session states, from the generated protocol. */
import { SessionState, TERMINAL_STATES } from './protocol';

const terminal: ReadonlySet<string> = new Set<string>(TERMINAL_STATES);

/** Whether a session in this state has ended for good. */
export function isTerminal(state: SessionState | string): boolean {
  return terminal.has(state);
}
