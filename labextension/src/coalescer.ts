/** Coalescing of refetches (pure: labextension/test/coalescer.spec.ts). */

/**
 * Runs an async task at most once per `wait` ms no matter how often it is
 * requested (trailing edge), never concurrently: a request that arrives while
 * the task runs schedules one more run afterwards. Avoids refetch storms when
 * many push events arrive, without starving like a plain debounce would.
 */
export class Coalescer {
  constructor(
    private readonly task: () => Promise<unknown>,
    readonly wait = 300
  ) {}

  /** Ask for a run; resolves when a run that started after this call has finished. */
  request(): Promise<void> {
    if (this._disposed) {
      return Promise.resolve();
    }
    if (!this._pending) {
      this._pending = new Promise<void>(resolve => {
        this._resolvePending = resolve;
      });
      if (!this._running) {
        this._schedule();
      }
    }
    return this._pending;
  }

  /** Run now (still never concurrently). */
  flush(): Promise<void> {
    const p = this.request();
    if (this._timer !== null && !this._running) {
      clearTimeout(this._timer);
      this._timer = null;
      void this._run();
    }
    return p;
  }

  get isRunning(): boolean {
    return this._running;
  }

  dispose(): void {
    this._disposed = true;
    if (this._timer !== null) {
      clearTimeout(this._timer);
      this._timer = null;
    }
    this._resolvePending?.();
    this._pending = null;
  }

  private _schedule(): void {
    this._timer = setTimeout(() => {
      this._timer = null;
      void this._run();
    }, this.wait);
  }

  private async _run(): Promise<void> {
    if (this._disposed) {
      return;
    }
    const resolve = this._resolvePending;
    this._pending = null;
    this._resolvePending = null;
    this._running = true;
    try {
      await this.task();
    } catch {
      // The task reports its own errors.
    } finally {
      this._running = false;
      resolve?.();
      if (this._pending && !this._disposed) {
        this._schedule();
      }
    }
  }

  private _timer: ReturnType<typeof setTimeout> | null = null;
  private _pending: Promise<void> | null = null;
  private _resolvePending: (() => void) | null = null;
  private _running = false;
  private _disposed = false;
}
