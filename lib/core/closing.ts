import { Bag } from './bag.js';

/**
 * A client's way to close without pulling anything from under running calls:
 * the acquires under way (close() lets them finish: they undo and reject), and
 * the waits under way (close() cuts them short).
 */
export class Closing {
  /** Set by `close`: the shutdown under way or done. */
  private closing: Promise<void> | undefined;
  // Bags, not Sets: both change at every call (see bag.ts).
  private readonly inFlight = new Bag<Promise<unknown>>();
  /** Stops every wait under way (one entry per waiting call). */
  private readonly waits = new Bag<() => void>();

  get isClosed(): boolean {
    return this.closing !== undefined;
  }

  /** Runs `shutDown` once, after the calls under way settled; every wait under way stops at once. Returns the same promise on every call. */
  close(shutDown: () => Promise<void>): Promise<void> {
    if (this.closing) return this.closing;
    this.closing = Promise.allSettled(this.inFlight.items()).then(shutDown);
    for (const stop of this.waits.items()) stop();
    return this.closing;
  }

  /** Counts `call` among the calls close() lets finish. */
  track<T>(call: Promise<T>): Promise<T> {
    const forget = this.inFlight.add(call);
    call.then(forget, forget);
    return call;
  }

  /** Resolves when `promise` settles, `ms` pass, `signal` aborts or the client closes; never rejects. */
  async settles(promise: Promise<unknown>, ms: number, signal: AbortSignal | undefined): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    let forget: (() => void) | undefined;
    try {
      await Promise.race([
        promise,
        new Promise<void>((resolve) => {
          forget = this.onStop(signal, resolve);
          timer = setTimeout(resolve, Math.max(0, ms));
        }),
      ]);
    } finally {
      clearTimeout(timer);
      forget?.();
    }
  }

  /** Resolves after `ms` with false, or at once with true when `signal` aborts or the client closes (or did). Never rejects. */
  pause(ms: number, signal: AbortSignal | undefined): Promise<boolean> {
    return new Promise((resolve) => {
      // Assigned after onStop, which may call its listener at once.
      let timer: NodeJS.Timeout | undefined = undefined;
      let stopped = false;
      const forget = this.onStop(signal, () => {
        stopped = true;
        clearTimeout(timer);
        resolve(true);
      });
      if (stopped) return;
      timer = setTimeout(() => (forget(), resolve(false)), ms);
    });
  }

  /**
   * Calls `stop` when `signal` aborts or the client closes, or at once when
   * either happened already; returns what forgets it. A listener, not an
   * AbortController: a waiting acquire waits once per refused attempt, and a
   * controller with its signal cost more than the rest of such a wait.
   */
  onStop(signal: AbortSignal | undefined, stop: () => void): () => void {
    if (this.closing || signal?.aborted) {
      stop();
      return () => undefined;
    }
    signal?.addEventListener('abort', stop, { once: true });
    const forget = this.waits.add(stop);
    return () => {
      signal?.removeEventListener('abort', stop);
      forget();
    };
  }
}
