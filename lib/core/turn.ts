import type { Grant, WakeNotifier } from './wake-notifier.js';

/**
 * How long a waiter that was handed the lock by some nodes waits for the
 * others' hand-overs before it makes an attempt of its own. One release's
 * hand-overs leave all nodes at once; a node still silent after this did not
 * hand over (the waiter was not first there) or is slow, and the attempt finds
 * the keys already handed over as its own.
 */
const GRANT_WINDOW_MS = 5;

/**
 * One waiting acquisition's turn-taking: waits for the retry delay, or less
 * when a release names this waiter. A wake-up that arrives during an attempt
 * is kept for the next wait, so it is never lost to timing. Releases that
 * hand the lock straight to this waiter are collected per node (`grants`).
 */
export class Turn {
  private wake: (() => void) | undefined;
  private woken = false;
  private readonly unwatch: () => void;
  /** Node index -> the hand-over it published, for this waiter. */
  readonly grants = new Map<number, Grant>();
  private grantTimer: NodeJS.Timeout | undefined;

  /** `lookAgain`: the caller already made an attempt (see `WakeNotifier.watch`). */
  constructor(
    notifier: WakeNotifier,
    waiter: string,
    lookAgain: boolean,
    private readonly quorum: number,
  ) {
    this.unwatch = notifier.watch(
      waiter,
      (node, grant) => {
        if (!grant) return this.rouse();
        this.grants.set(node, grant);
        if (this.grants.size >= this.quorum) return this.rouse();
        // Fewer than a quorum so far: give the other nodes' hand-overs a moment.
        if (!this.grantTimer) this.grantTimer = setTimeout(() => this.rouse(), GRANT_WINDOW_MS);
      },
      lookAgain,
    );
  }

  /** True when a quorum of nodes handed the lock to this waiter. */
  get granted(): boolean {
    return this.grants.size >= this.quorum;
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
    clearTimeout(this.grantTimer);
  }

  private rouse(): void {
    clearTimeout(this.grantTimer);
    this.grantTimer = undefined;
    if (this.wake) this.wake();
    else this.woken = true;
  }
}
