import type { WakeNotifier } from './wake-notifier.js';

/**
 * One waiting acquisition's turn-taking: waits for the retry delay, or less
 * when a release names this waiter. A wake-up that arrives during an attempt
 * is kept for the next wait, so it is never lost to timing.
 */
export class Turn {
  private wake: (() => void) | undefined;
  private woken = false;
  private readonly unwatch: () => void;

  /** `lookAgain`: the caller already made an attempt (see `WakeNotifier.watch`). */
  constructor(notifier: WakeNotifier, waiter: string, lookAgain: boolean) {
    this.unwatch = notifier.watch(
      waiter,
      () => {
        if (this.wake) this.wake();
        else this.woken = true;
      },
      lookAgain,
    );
  }

  /** Resolves after `delay` ms or at a wake-up; rejects when `signal` aborts. */
  wait(delay: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      if (this.woken) {
        this.woken = false;
        return resolve();
      }
      const finish = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', abort);
        this.wake = undefined;
      };
      const abort = () => {
        finish();
        reject(signal!.reason);
      };
      const timer = setTimeout(() => (finish(), resolve()), delay);
      signal?.addEventListener('abort', abort, { once: true });
      this.wake = () => (finish(), resolve());
    });
  }

  stop(): void {
    this.unwatch();
    this.wake = undefined;
  }
}
