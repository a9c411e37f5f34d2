import {
  elapsedSeconds,
  firstLine,
  formatBytes,
  formatCost,
  formatDuration,
  formatElapsed,
  formatTokens,
  formatUsage,
  sessionLabel,
  toMillis
} from '../src/format';
import { S, U } from './fixtures';

describe('sessionLabel', () => {
  const base = S('s1');
  it('prefers the name', () => {
    expect(sessionLabel({ ...base, name: ' root ', prompt: 'x' })).toBe('root');
  });
  it('falls back to the first words of the prompt', () => {
    expect(
      sessionLabel({ ...base, prompt: 'one two  three four five six seven eight nine ten' })
    ).toBe('one two three four five six seven eight…');
    expect(sessionLabel({ ...base, prompt: 'short\nprompt' })).toBe('short prompt');
  });
  it('falls back to the id', () => {
    expect(sessionLabel(base)).toBe('s1');
    expect(sessionLabel({ ...base, name: '  ', prompt: '' })).toBe('s1');
  });
});

describe('formatting', () => {
  it('formats tokens', () => {
    expect(formatTokens(0)).toBe('0');
    expect(formatTokens(950)).toBe('950');
    expect(formatTokens(1000)).toBe('1k');
    expect(formatTokens(1234)).toBe('1.2k');
    expect(formatTokens(45678)).toBe('46k');
    expect(formatTokens(999_499)).toBe('999k');
    expect(formatTokens(999_999)).toBe('1M');
    expect(formatTokens(1_234_567)).toBe('1.2M');
    expect(formatTokens(2_500_000_000)).toBe('2.5B');
    expect(formatTokens(undefined)).toBe('—');
    expect(formatTokens(NaN)).toBe('—');
  });

  it('formats cost', () => {
    expect(formatCost(0)).toBe('$0');
    expect(formatCost(0.00001)).toBe('<$0.0001');
    expect(formatCost(0.00042)).toBe('$0.0004');
    expect(formatCost(0.123)).toBe('$0.12');
    expect(formatCost(12.345)).toBe('$12.35');
    expect(formatCost(1234.5)).toBe('$1,235');
    expect(formatCost(null)).toBe('—');
  });

  it('formats elapsed time', () => {
    expect(formatElapsed(0)).toBe('0s');
    expect(formatElapsed(4.7)).toBe('4s');
    expect(formatElapsed(185)).toBe('3m 05s');
    expect(formatElapsed(3720)).toBe('1h 02m');
    expect(formatElapsed(93600)).toBe('1d 2h');
    expect(formatElapsed(null)).toBe('—');
    expect(formatElapsed(-1)).toBe('—');
  });

  it('formats own and subtree usage', () => {
    const s = S('a', {
      usage: { own: U({ total_tokens: 1200, cost: 0.01 }), subtree: U({ total_tokens: 5000, cost: 0.05 }) }
    });
    expect(formatUsage(s)).toBe('1.2k tok · $0.01 (Σ 5k · $0.05)');
    const leaf = S('b', {
      usage: { own: U({ total_tokens: 10 }), subtree: U({ total_tokens: 10 }) }
    });
    expect(formatUsage(leaf)).toBe('10 tok · $0');
    expect(formatUsage(S('c'))).toBe('0 tok · $0');
    const u = U({ total_tokens: 10100, prompt_tokens: 10000, cached_tokens: 9300, cost: 0.01 });
    expect(formatUsage(S('d', { usage: { own: u, subtree: u } }))).toBe('10k tok · $0.01 · 93% cached');
    const v = { ...u, uncached_cost: 0.03 };
    expect(formatUsage(S('e', { usage: { own: v, subtree: v } }))).toBe(
      '10k tok · $0.01 · 93% cached, saved $0.02'
    );
  });
});

describe('time', () => {
  it('parses epoch seconds, epoch ms and ISO strings', () => {
    expect(toMillis(1_700_000_000)).toBe(1_700_000_000_000);
    expect(toMillis(1_700_000_000_000)).toBe(1_700_000_000_000);
    expect(toMillis('1700000000.5')).toBe(1_700_000_000_500);
    expect(toMillis('2026-01-01T00:00:00Z')).toBe(Date.UTC(2026, 0, 1));
    expect(toMillis(null)).toBeNull();
    expect(toMillis('not a date')).toBeNull();
  });

  it('computes elapsed seconds from started (or created) to ended (or now)', () => {
    expect(elapsedSeconds(S('a', { created: 100, started: 110, ended: 150 }), 0)).toBe(40);
    expect(elapsedSeconds(S('a', { created: 100, started: 110 }), 200_000)).toBe(90);
    expect(elapsedSeconds(S('a', { created: 100, started: null }), 130_000)).toBe(30);
    expect(elapsedSeconds(S('a', { created: null as unknown as number }), 0)).toBeNull();
    // a terminal session without an end time does not keep ticking
    expect(elapsedSeconds(S('a', { state: 'DONE', started: 100 }), 999_000)).toBeNull();
  });
});

describe('small formats', () => {
  it('formats bytes, durations and first lines', () => {
    expect(formatBytes(512)).toBe('512 B');
    expect(formatBytes(2048)).toBe('2 kB');
    expect(formatBytes(3_500_000)).toBe('3.5 MB');
    expect(formatDuration(0.421)).toBe('0.42s');
    expect(formatDuration(12.34)).toBe('12.3s');
    expect(formatDuration(75)).toBe('1m 15s');
    expect(firstLine('one\ntwo')).toBe('one');
    expect(firstLine('x'.repeat(100), 10)).toBe('xxxxxxxxx…');
  });
});
