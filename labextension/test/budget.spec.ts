import { formatBudget, parseAutonomous, parseBudget } from '../src/budget';

describe('parseBudget', () => {
  it('accepts empty inputs as no budget', () => {
    expect(parseBudget({})).toBeUndefined();
    expect(parseBudget({ tokens: '  ', dollars: ' ', seconds: '', turns: '' })).toBeUndefined();
  });
  it("sends the daemon's keys: tokens with k/M suffixes, dollars", () => {
    expect(parseBudget({ tokens: '50k' })).toEqual({ tokens: 50000 });
    expect(parseBudget({ tokens: '1.5M', dollars: '$0.50' })).toEqual({ tokens: 1_500_000, dollars: 0.5 });
    expect(parseBudget({ tokens: '200,000', dollars: '2' })).toEqual({ tokens: 200000, dollars: 2 });
  });
  it('parses seconds as durations and turns as counts', () => {
    expect(parseBudget({ seconds: '90' })).toEqual({ seconds: 90 });
    expect(parseBudget({ seconds: '10m', turns: '30' })).toEqual({ seconds: 600, turns: 30 });
    expect(parseBudget({ seconds: '1.5h' })).toEqual({ seconds: 5400 });
    expect(parseBudget({ seconds: '45s', turns: '1k' })).toEqual({ seconds: 45, turns: 1000 });
  });
  it('rejects bad input with a clear message', () => {
    expect(() => parseBudget({ tokens: 'lots' })).toThrow(/Token budget/);
    expect(() => parseBudget({ tokens: '0' })).toThrow(/positive/);
    expect(() => parseBudget({ dollars: '-1' })).toThrow(/Dollar budget/);
    expect(() => parseBudget({ dollars: 'abc' })).toThrow(/Dollar budget/);
    expect(() => parseBudget({ seconds: 'soon' })).toThrow(/Time limit/);
    expect(() => parseBudget({ seconds: '0' })).toThrow(/Time limit must be positive/);
    expect(() => parseBudget({ turns: '-3' })).toThrow(/Turn budget/);
  });
});

describe('formatBudget', () => {
  it('shows each limit in its unit and skips bookkeeping', () => {
    expect(formatBudget({ tokens: 50000, dollars: 0.5, seconds: 600, turns: 30 })).toBe(
      'tokens 50k, dollars $0.50, time 10m 00s, turns 30'
    );
    expect(formatBudget({ tokens: 1000, spent: { tokens: 3 } })).toBe('tokens 1k');
    expect(formatBudget(null)).toBe('');
  });
});

describe('parseAutonomous', () => {
  it("is true when every field is blank: the daemon's defaults", () => {
    expect(parseAutonomous({})).toBe(true);
    expect(parseAutonomous({ gate: ' ', maxContinuations: '', turns: ' ', tokens: '', seconds: '' })).toBe(true);
  });
  it("sends the gate and the limits given, by the daemon's keys", () => {
    expect(parseAutonomous({ gate: ' pytest -q ' })).toEqual({ gate: 'pytest -q' });
    expect(parseAutonomous({ maxContinuations: '5', turns: '20', tokens: '80k', seconds: '10m' })).toEqual({
      max_continuations: 5,
      turns: 20,
      tokens: 80000,
      seconds: 600
    });
  });
  it('refuses what is not a whole number in range, naming the field', () => {
    expect(() => parseAutonomous({ maxContinuations: '2.5' })).toThrow('Continuations must be a whole number from 1 to 1000, got "2.5"');
    expect(() => parseAutonomous({ maxContinuations: '0' })).toThrow(/Continuations must be a whole number/);
    expect(() => parseAutonomous({ turns: 'many' })).toThrow(/Turns per continuation must be a whole number from 1 to 10000/);
    expect(() => parseAutonomous({ turns: '10001' })).toThrow(/Turns per continuation/);
    expect(() => parseAutonomous({ tokens: 'lots' })).toThrow(/Tokens per continuation must be a positive number/);
    expect(() => parseAutonomous({ seconds: 'soon' })).toThrow(/Time per continuation must be seconds or a duration/);
  });
});
