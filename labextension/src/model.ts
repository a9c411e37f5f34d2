/**
 * Pure model logic for the Agents panel: types matching docs/architecture.md,
 * tree building, filtering and formatting. No DOM, no JupyterLab imports, so it
 * can be unit tested in node.
 */

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
  created?: string | number | null;
  started?: string | number | null;
  ended?: string | number | null;
  error?: string | null;
  answer_repr?: string | null;
  usage?: { own?: IUsage; subtree?: IUsage } | null;
  budget?: Record<string, unknown> | null;
}

/**
 * A display label: the session name, or the first words of its prompt.
 */
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
