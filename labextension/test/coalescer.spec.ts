import { Coalescer } from '../src/coalescer';

describe('Coalescer', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('runs once for a burst of requests', async () => {
    let runs = 0;
    const c = new Coalescer(async () => {
      runs++;
    }, 100);
    const ps = [c.request(), c.request(), c.request()];
    expect(runs).toBe(0);
    await jest.advanceTimersByTimeAsync(100);
    await Promise.all(ps);
    expect(runs).toBe(1);
    c.dispose();
  });

  it('does not starve under a continuous stream of requests', async () => {
    let runs = 0;
    const c = new Coalescer(async () => {
      runs++;
    }, 100);
    for (let i = 0; i < 10; i++) {
      void c.request();
      await jest.advanceTimersByTimeAsync(50);
    }
    expect(runs).toBeGreaterThanOrEqual(4);
    expect(runs).toBeLessThanOrEqual(5);
    c.dispose();
  });

  it('never runs concurrently and reruns once for requests made while running', async () => {
    let active = 0;
    let maxActive = 0;
    let runs = 0;
    let release: () => void = () => undefined;
    const c = new Coalescer(async () => {
      active++;
      runs++;
      maxActive = Math.max(maxActive, active);
      await new Promise<void>(r => (release = r));
      active--;
    }, 10);
    void c.flush();
    await jest.advanceTimersByTimeAsync(0);
    expect(c.isRunning).toBe(true);
    const later = c.request();
    void c.request();
    await jest.advanceTimersByTimeAsync(50);
    expect(runs).toBe(1);
    release();
    await jest.advanceTimersByTimeAsync(10);
    expect(runs).toBe(2);
    release();
    await jest.advanceTimersByTimeAsync(0);
    await later;
    expect(maxActive).toBe(1);
    c.dispose();
  });

  it('flush runs without waiting', async () => {
    let runs = 0;
    const c = new Coalescer(async () => {
      runs++;
    }, 10_000);
    await c.flush();
    expect(runs).toBe(1);
    c.dispose();
  });
});
