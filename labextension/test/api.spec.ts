/**
 * The REST client's session list: its filters are the protocol's `SessionFilter`, each sent under
 * the query name the daemon reads (`SESSION_FILTER_QUERY`, both generated from
 * prime_kernel/protocol/requests.py), as `SessionFilter.to_query` writes them in Python.
 */
import { PrimeAPI, sessionListQuery } from '../src/api';
import { SESSION_FILTER_QUERY } from '../src/protocol';

describe('sessionListQuery', () => {
  it('sends every filter under its protocol name, a state once per state', () => {
    const q = sessionListQuery({
      states: ['DONE', 'RUNNING'],
      root_id: 'r 1',
      parent_id: 'p1',
      limit: 5,
      changed_after: 0
    });
    expect(q).toBe('?state=DONE&state=RUNNING&root=r%201&parent=p1&limit=5&changed_after=0');
    const sent = new Set([...new URLSearchParams(q.slice(1)).keys()]);
    expect(sent).toEqual(new Set(Object.values(SESSION_FILTER_QUERY)));
  });

  it('leaves out what filters nothing (as the daemon reads a blank value)', () => {
    expect(sessionListQuery({})).toBe('');
    expect(sessionListQuery({ states: [], root_id: '', parent_id: undefined })).toBe('');
  });
});

describe('PrimeAPI.listSessions', () => {
  it('asks GET /api/prime/sessions with the filter as its query', async () => {
    const api = new PrimeAPI({ baseUrl: 'http://x/' } as PrimeAPI['settings']);
    const asked: [string[], RequestInit | undefined, string | undefined][] = [];
    api.request = async <T>(path: string[], init?: RequestInit, q?: string): Promise<T> => {
      asked.push([path, init, q]);
      return { sessions: [], cursor: 0, epoch: 'e' } as T;
    };
    await api.listSessions({ changed_after: 7 });
    await api.listSessions();
    expect(asked).toEqual([
      [['sessions'], {}, '?changed_after=7'],
      [['sessions'], {}, '']
    ]);
  });
});
