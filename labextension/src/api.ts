/**
 * REST client for the prime_kernel server extension (docs/architecture.md).
 * Uses ServerConnection.makeRequest, which adds auth token and XSRF headers.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import { ISession } from './model';

export class PrimeAPIError extends Error {
  constructor(
    message: string,
    readonly status: number
  ) {
    super(message);
  }
}

export class PrimeAPI {
  constructor(readonly settings: ServerConnection.ISettings = ServerConnection.makeSettings()) {}

  url(...parts: string[]): string {
    return URLExt.join(this.settings.baseUrl, 'api/prime', ...parts);
  }

  async request<T>(path: string[], init: RequestInit = {}, query = ''): Promise<T> {
    const url = this.url(...path) + query;
    let response: Response;
    try {
      response = await ServerConnection.makeRequest(url, init, this.settings);
    } catch (err) {
      throw new PrimeAPIError(`Cannot reach the server: ${err}`, 0);
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

  async listSessions(): Promise<ISession[]> {
    const data = await this.request<{ sessions: ISession[] }>(['sessions']);
    return (data && data.sessions) || [];
  }
}
