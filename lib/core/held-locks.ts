import { Bag } from './bag.js';
import type { LockKeys } from './keys.js';
import type { Lock } from './lock.js';
import type { PermitCalls } from './permit.js';
import { MAX_DELAY } from './options.js';

/** Below this many held locks, expired ones are not swept (see `sweep`). */
const SWEEP_MIN = 64;

/** What a release needs of a lock: its keys, the nodes its acquire went to, and its waiter id if it queued (RELEASE leaves the queues). */
export interface Releasable {
  readonly keys: LockKeys;
  readonly sentTo: readonly boolean[];
  /** Its waiter id if it may have queued, else ''. */
  readonly queuedAs: string;
  /**
   * Absent when it queued for sure (or never could). Else the acquire's nodes
   * that have not said yes yet (see `RoundResult.unconfirmed`, kept up to
   * date): while any, the release leaves the queues under `queuedAs`, since a
   * node may have refused, and queued it, after the lock was taken.
   */
  readonly unconfirmed?: { readonly count: number };
  /** A read-write lock's permit: its own extend and release. */
  readonly permit?: PermitCalls;
  /** A semaphore's permit (a lock on one of its slots): its marker, kept alive by each extension, its limit, and the slot. */
  readonly slot?: { readonly mark: string; readonly limit: number; readonly index: number };
}

/**
 * A client's bookkeeping of its locks: those held (neither released nor found
 * lost), for close(); and, per lock not yet released, lost ones included (a
 * lost lock's release still deletes what is left of its keys), what its
 * release needs. Weak: a lock dropped by its user takes its entry with it.
 */
export class HeldLocks {
  // A Bag, not a Set: it changes at every acquire and release (see bag.ts).
  private readonly held = new Bag<Lock>();
  /** Per held lock, what takes it out of `held`. */
  private readonly unholds = new WeakMap<Lock, () => void>();
  private readonly releasable = new WeakMap<Lock, Releasable>();
  /** `held` size at which expired locks are swept out (see sweep()). */
  private sweepAt = SWEEP_MIN;
  /** Called when a lock leaves `held` (drain() waits for it). */
  private emptied: (() => void) | undefined;

  get size(): number {
    return this.held.size;
  }

  /** The held locks, as a copy. */
  list(): Lock[] {
    return this.held.items();
  }

  add(lock: Lock, releasable: Releasable): void {
    this.unholds.set(lock, this.held.add(lock));
    if (this.held.size >= this.sweepAt) this.sweep();
    this.releasable.set(lock, releasable);
  }

  has(lock: Lock): boolean {
    return this.unholds.has(lock);
  }

  /** What a release of `lock` needs; undefined once released. */
  releasableOf(lock: Lock): Releasable | undefined {
    return this.releasable.get(lock);
  }

  /** The lock is released (or left to expire): its entry goes. */
  released(lock: Lock): void {
    this.releasable.delete(lock);
  }

  /** Drops a lock from the held set; false when it was not there. */
  forget(lock: Lock): boolean {
    const unhold = this.unholds.get(lock);
    if (!unhold) return false;
    this.unholds.delete(lock);
    unhold();
    this.emptied?.();
    return true;
  }

  /**
   * Waits until no lock is kept by running work (auto-extended: `using`,
   * `@Locked`, `autoExtend`) or `until` (`performance.now()` time). Other held
   * locks are not waited for: no call of the client knows when their holder is done.
   */
  async drain(until: number): Promise<void> {
    for (;;) {
      for (const lock of this.held.items()) if (lock.overdue) this.forget(lock);
      const now = performance.now();
      const running = this.held.items().filter((lock) => lock.autoExtends);
      if (running.length === 0 || now >= until) return;
      let next = until;
      for (const lock of running) next = Math.min(next, now + lock.validity + 1);
      let timer: NodeJS.Timeout | undefined;
      await new Promise<void>((resolve) => {
        this.emptied = resolve;
        timer = setTimeout(resolve, Math.min(next - now, MAX_DELAY));
      });
      clearTimeout(timer);
      this.emptied = undefined;
    }
  }

  /**
   * Forgets held locks past their validity (left to expire, never released):
   * run when the set has doubled since the last sweep, so that it stays
   * proportional to the locks actually held, at a constant cost per acquire.
   */
  private sweep(): void {
    for (const lock of this.held.items()) if (lock.overdue) this.forget(lock);
    this.sweepAt = Math.max(SWEEP_MIN, 2 * this.held.size);
  }
}
