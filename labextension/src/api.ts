/**
 * REST client for the prime_kernel server extension (docs/reference.md, generated from
 * prime_kernel/protocol). ServerConnection.makeRequest adds the auth token and XSRF headers.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import { kindUrl } from './harnessData';
import {
  CancelResult,
  CapabilityRequest,
  CreateSchedule,
  CreateSession,
  ExportRequest,
  ExportResult,
  Goal,
  GoalChange,
  ModelList,
  Schedule,
  ScheduleList,
  Session,
  SESSION_FILTER_QUERY,
  SessionFilter,
  SessionList,
  TrajectoryEvent,
  Verification,
  VerifyRequest
} from './protocol';
import type {
  IEntryUpdate,
  IHarnessEntry,
  IHarnessListing,
  IHarnessVersion,
  INewEntry,
  IPrimeAPI,
  IRefinement,
  IRefineProgress,
  IRefineRequest,
  IServerStatus,
  IVersionFiles,
  ReviewAction
} from './tokens';

export class PrimeAPIError extends Error {
  constructor(
    message: string,
    readonly status: number,
    /** The daemon's error reply (`{error, message, ...}`), when it sent one. */
    readonly data: Record<string, unknown> = {}
  ) {
    super(message);
    this.name = 'PrimeAPIError';
  }
}

type QueryValue = string | number | undefined | null;

/** A query string (with its `?`, or none): an array's name once per item, empty values left out. */
function query(params: Record<string, QueryValue | readonly QueryValue[]>): string {
  const parts = Object.entries(params)
    .flatMap(([k, v]) => (Array.isArray(v) ? v : [v]).map((item: QueryValue) => [k, item] as const))
    .filter(([, v]) => v !== undefined && v !== null && v !== '')
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`);
  return parts.length ? `?${parts.join('&')}` : '';
}

/** A session list's query (GET /api/prime/sessions): each filter under its protocol name. */
export function sessionListQuery(filter: SessionFilter): string {
  const fields = Object.keys(SESSION_FILTER_QUERY) as (keyof SessionFilter)[];
  return query(Object.fromEntries(fields.map(f => [SESSION_FILTER_QUERY[f], filter[f]])));
}

/** The message of an error reply: `message`, else `reason` or `error`, else the status. */
function errorMessage(data: unknown, response: Response): string {
  if (data && typeof data === 'object') {
    const body = data as { message?: unknown; reason?: unknown; error?: unknown };
    const text = body.message || body.reason || body.error;
    if (text) {
      return String(text);
    }
  }
  return `${response.status} ${response.statusText}`;
}

export class PrimeAPI implements IPrimeAPI {
  constructor(readonly settings: ServerConnection.ISettings = ServerConnection.makeSettings()) {}

  url(...parts: string[]): string {
    return URLExt.join(this.settings.baseUrl, 'api/prime', ...parts.map(encodeURIComponent));
  }

  async request<T>(path: string[], init: RequestInit = {}, q = ''): Promise<T> {
    const url = this.url(...path) + q;
    let response: Response;
    try {
      response = await ServerConnection.makeRequest(url, init, this.settings);
    } catch (err) {
      throw new PrimeAPIError(`cannot reach the server (${(err as Error).message || err})`, 0);
    }
    const text = await response.text();
    let data: unknown = null;
    if (text) {
      try {
        data = JSON.parse(text);
      } catch {
        data = text;
      }
    }
    if (!response.ok) {
      const reply = data && typeof data === 'object' ? (data as Record<string, unknown>) : {};
      throw new PrimeAPIError(errorMessage(data, response), response.status, reply);
    }
    return data as T;
  }

  private _json(method: string, body?: unknown): RequestInit {
    const init: RequestInit = { method };
    if (body !== undefined) {
      init.body = JSON.stringify(body);
      init.headers = { 'Content-Type': 'application/json' };
    }
    return init;
  }

  /** GET /api/prime/status: how agent kernels are confined here. */
  status(): Promise<IServerStatus> {
    return this.request<IServerStatus>(['status']);
  }

  /** POST /api/prime/capability: a token that lets `kernelId` start agents. */
  capability(kernelId: string): Promise<{ url: string; token: string }> {
    const body: CapabilityRequest = { kernel_id: kernelId };
    return this.request(['capability'], this._json('POST', body));
  }

  /**
   * The sessions, newest first, with a `cursor` and the daemon run's `epoch`; with
   * `changed_after` (an earlier cursor of the same epoch) only those changed since.
   */
  listSessions(filter: SessionFilter = {}): Promise<SessionList> {
    return this.request<SessionList>(['sessions'], {}, sessionListQuery(filter));
  }

  getSession(id: string): Promise<Session> {
    return this.request<Session>(['sessions', id]);
  }

  createSession(body: CreateSession): Promise<Session> {
    return this.request<Session>(['sessions'], this._json('POST', body));
  }

  cancelSession(id: string): Promise<CancelResult> {
    return this.request<CancelResult>(['sessions', id], { method: 'DELETE' });
  }

  async events(id: string, after = 0): Promise<TrajectoryEvent[]> {
    const data = await this.request<{ events: TrajectoryEvent[] }>(
      ['sessions', id, 'events'],
      {},
      query({ after: after || undefined })
    );
    return (data && data.events) || [];
  }

  sendMessage(id: string, message: string): Promise<unknown> {
    return this.request(['sessions', id, 'messages'], this._json('POST', { message }));
  }

  interrupt(id: string): Promise<unknown> {
    return this.request(['sessions', id, 'interrupt'], this._json('POST', {}));
  }

  /** Set the session's goal (`text`), note progress, or mark it done, as the user. */
  async setGoal(id: string, change: GoalChange): Promise<Goal> {
    const data = await this.request<{ goal: Goal }>(['sessions', id, 'goal'], this._json('PUT', change));
    return data.goal;
  }

  /** Clear the session's goal; false if it had none. */
  async clearGoal(id: string): Promise<boolean> {
    const data = await this.request<{ cleared: boolean }>(['sessions', id, 'goal'], { method: 'DELETE' });
    return data.cleared;
  }

  /** Schedules, newest first: with `session`, those owned by it or ticking to it. */
  async schedules(filters: { session?: string; state?: Schedule['state'] } = {}): Promise<Schedule[]> {
    const data = await this.request<ScheduleList>(['schedules'], {}, query(filters));
    return (data && data.schedules) || [];
  }

  /** Make a person's schedule to a session; its record. */
  createSchedule(body: CreateSchedule): Promise<Schedule> {
    return this.request<Schedule>(['schedules'], this._json('POST', body));
  }

  /** Cancel a schedule (a person may cancel any); its record as it is now. */
  cancelSchedule(scheduleId: string): Promise<Schedule> {
    return this.request<Schedule>(['schedules', scheduleId], { method: 'DELETE' });
  }

  models(): Promise<ModelList> {
    return this.request<ModelList>(['models']);
  }

  /**
   * Write the session's trajectory as a notebook (or, with `subtree`, a folder of linked
   * notebooks) under the server root. A POST, so the XSRF check covers it.
   */
  exportNotebook(id: string, body: ExportRequest): Promise<ExportResult> {
    return this.request<ExportResult>(['sessions', id, 'export'], this._json('POST', body));
  }

  // -- the harness ----------------------------------------------------------------------

  harness(): Promise<IHarnessListing> {
    return this.request<IHarnessListing>(['harness']);
  }

  /** Create an entry (author "user"); 409 if it exists in that scope. */
  harnessCreate(body: INewEntry): Promise<IHarnessEntry> {
    return this.request<IHarnessEntry>(['harness'], this._json('POST', body));
  }

  harnessEntry(kind: string, id: string): Promise<IHarnessEntry> {
    return this.request<IHarnessEntry>(['harness', kindUrl(kind), id]);
  }

  /** Change an entry (author "user"); 409 if `base_version` is no longer its version. */
  harnessUpdate(kind: string, id: string, body: IEntryUpdate): Promise<IHarnessEntry> {
    return this.request<IHarnessEntry>(['harness', kindUrl(kind), id], this._json('PUT', body));
  }

  async harnessHistory(kind: string, id: string): Promise<IHarnessVersion[]> {
    const data = await this.request<{ versions: IHarnessVersion[] }>([
      'harness',
      kindUrl(kind),
      id,
      'history'
    ]);
    return (data && data.versions) || [];
  }

  /** A version with its files before and after (file name -> text, or null). */
  harnessVersion(kind: string, id: string, version: number): Promise<IVersionFiles> {
    return this.request<IVersionFiles>(['harness', kindUrl(kind), id, 'versions', String(version)]);
  }

  async harnessDiff(kind: string, id: string, a: number, b?: number): Promise<string> {
    const data = await this.request<{ diff: string }>(
      ['harness', kindUrl(kind), id, 'diff'],
      {},
      query({ a, b })
    );
    return (data && data.diff) || '';
  }

  harnessRollback(kind: string, id: string, version: number, reason: string): Promise<IHarnessVersion> {
    return this.request<IHarnessVersion>(
      ['harness', kindUrl(kind), id, 'rollback'],
      this._json('POST', { version, reason })
    );
  }

  /** Run a refinement (one model call); from a session's trajectory when given. */
  refine(body: IRefineRequest): Promise<IRefinement> {
    return this.request<IRefinement>(['harness', 'refine'], this._json('POST', body));
  }

  async refinements(limit = 50): Promise<IRefinement[]> {
    const data = await this.request<{ refinements: IRefinement[] }>(
      ['harness', 'refinements'],
      {},
      query({ limit })
    );
    return (data && data.refinements) || [];
  }

  /** The refinements under way: how long each has run and how much reply it has. */
  async refineProgress(): Promise<IRefineProgress[]> {
    const data = await this.request<{ running?: IRefineProgress[] }>(['harness', 'refinements'], {}, query({ limit: 1 }));
    return (data && data.running) || [];
  }

  /** Mark a session's answer right or wrong; the harness learns from it (review policy). */
  verify(id: string, body: VerifyRequest): Promise<Verification> {
    return this.request<Verification>(['sessions', id, 'verify'], this._json('POST', body));
  }

  /** Approve or reject some edits of a refinement (all pending ones without `edits`), or roll it back. */
  reviewRefinement(
    rid: string,
    action: ReviewAction,
    edits?: number[]
  ): Promise<IRefinement> {
    return this.request<IRefinement>(
      ['harness', 'refinements', rid, action],
      this._json('POST', edits ? { edits } : {})
    );
  }
}
