import type { LockLostError } from './errors/lock-lost.error.js';

export interface LostObserver {
  next?(error: LockLostError): void;
  complete?(): void;
}

/** The key RxJS looks up for interop (`from(lock.lost$)`), without depending on RxJS. */
const OBSERVABLE_KEY: symbol | string = (Symbol as { observable?: symbol }).observable ?? '@@observable';

/**
 * A minimal observable of a lock's loss: emits the `LockLostError` once when
 * the signal fires, then completes (a released lock never emits). Subscribe
 * directly, or turn it into an RxJS Observable with `from(lock.lost$)`.
 */
export class LostStream {
  constructor(private readonly signal: () => AbortSignal) {}

  subscribe(observer: LostObserver | ((error: LockLostError) => void)): { unsubscribe(): void } {
    const { next, complete } = typeof observer === 'function' ? { next: observer, complete: undefined } : observer;
    const signal = this.signal();
    const fire = () => {
      next?.call(observer, signal.reason as LockLostError);
      complete?.call(observer);
    };
    if (signal.aborted) {
      fire();
      return { unsubscribe: () => undefined };
    }
    signal.addEventListener('abort', fire, { once: true });
    return { unsubscribe: () => signal.removeEventListener('abort', fire) };
  }
}

// RxJS interop, defined outside the class so that the declarations do not name it: a computed
// member whose key is not a `unique symbol` fails TypeScript 5.7 and older with `skipLibCheck`
// off (TS1166), and RxJS's `ObservableInput` types would not take it anyway.
Object.defineProperty(LostStream.prototype, OBSERVABLE_KEY, {
  value(this: LostStream): LostStream {
    return this;
  },
});
