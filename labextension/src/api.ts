/**
 * REST client for the prime_kernel server extension (docs/architecture.md).
 * ServerConnection.makeRequest adds the auth token and XSRF headers.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import {
  IEntryUpdate,
  IHarnessEntry,
  IHarnessListing,
  IHarnessVersion,
  IRefinement,
  kindUrl
} from './harnessModel';
import { ISandboxStatus } from './security';
import { IEvent, IExportRequest, IExportResult, IModels, INewSession, ISession } from './model';

export class PrimeAPIError extends Error {
  constructor(
    message: string,
    readonly status: number
  ) {
    super(message);
    this.name = 'PrimeAPIError';
  }
}

function query(params: Record<string, string | number | undefined | null>): string {
  const parts = Object.entries(params)
    .filter(([, v]) => v !== undefined && v !== null && v !== '')
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`);
  return parts.length ? `?${parts.join('&')}` : '';
}

export class PrimeAPI {
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
    let data: any = null;
    if (text) {
      try {
        data = JSON.parse(text);
      } catch {
        data = text;
      }
    }
    if (!response.ok) {
      const msg =
        (data && typeof data === 'object' && (data.message || data.reason || data.error)) ||
        `${response.status} ${response.statusText}`;
      throw new PrimeAPIError(String(msg), response.status);
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
  async status(): Promise<{ version: string; sandbox: ISandboxStatus }> {
    return this.request(['status']);
  }

  /** POST /api/prime/capability: a token that lets `kernelId` start agents. */
  async capability(kernelId: string): Promise<{ url: string; token: string }> {
    return this.request(['capability'], this._json('POST', { kernel_id: kernelId }));
  }

  async listSessions(filters: { state?: string; root?: string } = {}): Promise<ISession[]> {
    const data = await this.request<{ sessions: ISession[] }>(['sessions'], {}, query(filters));
    return (data && data.sessions) || [];
  }

  getSession(id: string): Promise<ISession> {
    return this.request<ISession>(['sessions', id]);
  }

  createSession(body: INewSession): Promise<ISession> {
    return this.request<ISession>(['sessions'], this._json('POST', body));
  }

  cancelSession(id: string): Promise<{ cancelled: string[]; already_ended: boolean }> {
    return this.request(['sessions', id], { method: 'DELETE' });
  }

  async events(id: string, after = 0): Promise<IEvent[]> {
    const data = await this.request<{ events: IEvent[] }>(
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

  models(): Promise<IModels> {
    return this.request<IModels>(['models']);
  }

  /**
   * Write the session's trajectory as a notebook (or, with `subtree`, a folder of linked
   * notebooks) under the server root. A POST, so the XSRF check covers it.
   */
  exportNotebook(id: string, body: IExportRequest): Promise<IExportResult> {
    return this.request<IExportResult>(['sessions', id, 'export'], this._json('POST', body));
  }

  /** Whether the harness endpoints exist (GET /api/prime/harness answers 200). */
  async harnessAvailable(): Promise<boolean> {
    try {
      await this.request(['harness']);
      return true;
    } catch {
      return false;
    }
  }

  // -- Continual Harness (docs/architecture.md, "Continual Harness") ------------------

  harness(): Promise<IHarnessListing> {
    return this.request<IHarnessListing>(['harness']);
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
  harnessVersion(
    kind: string,
    id: string,
    version: number
  ): Promise<IHarnessVersion & { before: Record<string, string> | null; after: Record<string, string> | null }> {
    return this.request(['harness', kindUrl(kind), id, 'versions', String(version)]);
  }

  async harnessDiff(kind: string, id: string, a: number, b?: number): Promise<string> {
    const data = await this.request<{ diff: string }>(
      ['harness', kindUrl(kind), id, 'diff'],
      {},
      query({ a, b })
    );
    return (data && data.diff) || '';
  }

  harnessRollback(kind: string, id: string, version: number): Promise<IHarnessVersion> {
    return this.request<IHarnessVersion>(
      ['harness', kindUrl(kind), id, 'rollback'],
      this._json('POST', { version, reason: `rolled back to version ${version} from the Harness view` })
    );
  }

  /** Run a refinement (one model call); from a session's trajectory when given. */
  refine(body: { session_id?: string; instructions?: string }): Promise<IRefinement> {
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

  /** Approve or reject some edits of a refinement (all pending ones without `edits`), or roll it back. */
  reviewRefinement(
    rid: string,
    action: 'approve' | 'reject' | 'rollback',
    edits?: number[]
  ): Promise<IRefinement> {
    return this.request<IRefinement>(
      ['harness', 'refinements', rid, action],
      this._json('POST', edits ? { edits } : {})
    );
  }
}
