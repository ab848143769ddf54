/**
 * A client's way to close without pulling anything from under running calls:
 * the acquires under way (close() lets them finish: they undo and reject), and
 * the waits under way (close() cuts them short).
 */
export class Closing {
  /** Set by `close`: the shutdown under way or done. */
  private closing: Promise<void> | undefined;
  private readonly inFlight = new Set<Promise<unknown>>();
  /** Stops every wait under way (one entry per waiting call). */
  private readonly waits = new Set<() => void>();

  get isClosed(): boolean {
    return this.closing !== undefined;
  }

  /** Runs `shutDown` once, after the calls under way settled; every wait under way stops at once. Returns the same promise on every call. */
  close(shutDown: () => Promise<void>): Promise<void> {
    if (this.closing) return this.closing;
    this.closing = Promise.allSettled([...this.inFlight]).then(shutDown);
    for (const stop of [...this.waits]) stop();
    return this.closing;
  }

  /** Counts `call` among the calls close() lets finish. */
  track<T>(call: Promise<T>): Promise<T> {
    this.inFlight.add(call);
    const forget = () => this.inFlight.delete(call);
    call.then(forget, forget);
    return call;
  }

  /** Resolves when `promise` settles, `ms` pass, `signal` aborts or the client closes; never rejects. */
  async settles(promise: Promise<unknown>, ms: number, signal: AbortSignal | undefined): Promise<void> {
    const stop = this.stopOnClose(signal);
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        promise,
        new Promise((resolve) => {
          timer = setTimeout(resolve, Math.max(0, ms));
          stop.signal.addEventListener('abort', resolve, { once: true });
        }),
      ]);
    } finally {
      clearTimeout(timer);
      stop.dispose();
    }
  }

  /** A signal that aborts with `signal` or when the client closes; dispose() it after use. */
  stopOnClose(signal: AbortSignal | undefined): { signal: AbortSignal; dispose: () => void } {
    const controller = new AbortController();
    const abort = () => controller.abort(signal?.reason);
    if (this.closing || signal?.aborted) abort();
    signal?.addEventListener('abort', abort, { once: true });
    this.waits.add(abort);
    return {
      signal: controller.signal,
      dispose: () => {
        signal?.removeEventListener('abort', abort);
        this.waits.delete(abort);
      },
    };
  }
}
