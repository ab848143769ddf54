import { inspect } from 'node:util';
import { LockLostError, type LostReason } from './errors/lock-lost.error.js';
import type { LockError } from './errors/lock.error.js';
import { LostStream } from './lost-stream.js';
import { MAX_DELAY } from './options.js';

/** What a lock needs from the client that made it. */
export interface LockOwner {
  extend(lock: Lock, ttl?: number): Promise<Lock>;
  release(lock: Lock): Promise<void>;
  expireAfter(lock: Lock, ms: number): Promise<void>;
  /** Called once when the lock is found lost (signal fired, extension stopped). */
  lost(lock: Lock, reason: LostReason): void;
  /** Called when an automatic extension fails but the lock may still be valid. */
  extendFailed(lock: Lock, error: LockError): void;
}

export interface LockInit {
  readonly id: string;
  readonly resources: readonly string[];
  readonly value: string;
  readonly ttl: number;
  /** `performance.now()` time after which the lock is no longer safe. */
  readonly expiresAt: number;
  readonly fencingToken: number | undefined;
  readonly attempts: number;
  readonly threshold: number;
  readonly maxExtensions: number;
  /** A semaphore's permit: its limit. */
  readonly limit?: number;
  /** A read-write lock's permit: which. */
  readonly mode?: 'read' | 'write';
}

/** Set by Lock's static block: the one way to a lock's secret from outside the class. */
let readSecret: (lock: Lock) => string;

/** The holder's secret value of a lock: for the client's scripts only, never for logs. */
export function secretOf(lock: Lock): string {
  return readSecret(lock);
}

/**
 * A held lock. Its `validity` says how long mutual exclusion can be relied on;
 * its `signal` fires when the lock is lost (expired, keys gone, or extension
 * impossible). Release it in a `finally`, with `await using`, or use `Redlock.using`.
 *
 * @example
 * const lock = await redlock.acquire('invoice:42', 5000);
 * try { await work(lock.signal, lock.fencingToken); } finally { await lock.release(); }
 * // or, released when the block exits:
 * await using held = await redlock.acquire('invoice:42', 5000);
 */
export class Lock implements AsyncDisposable {
  /** Public id of this lock (random, unrelated to the secret value), for events and logs. */
  readonly id: string;
  readonly resources: readonly string[];
  /**
   * Fencing token: strictly greater than the token of every acquisition of
   * these resources that completed before this one started, as long as a
   * majority of nodes kept its data. `undefined` when fencing is off.
   */
  readonly fencingToken: number | undefined;
  /** Attempts it took to acquire. */
  readonly attempts: number;
  /** A semaphore's permit: the `limit` it was acquired with; `undefined` otherwise. */
  readonly limit: number | undefined;
  /** A read-write lock's permit: the `mode` it was acquired with; `undefined` otherwise. */
  readonly mode: 'read' | 'write' | undefined;
  /** Wall-clock time it was acquired, ms since the epoch. */
  readonly acquiredAt = Date.now();

  private ttlMs: number;
  private expiry: number;
  private state: 'held' | 'released' | 'lost' = 'held';
  private lostReason: LostReason | undefined;
  private controller: AbortController | undefined;
  private expiryTimer: NodeJS.Timeout | undefined;
  private extendTimer: NodeJS.Timeout | undefined;
  private autoExtending = false;
  private extensionCount = 0;
  private readonly threshold: number;
  private readonly maxExtensions: number;

  /** The client that made it: truly private, so that no logger walks into its nodes. */
  readonly #owner: LockOwner;
  // A private field, which no inspect, serializer or logger reaches; a WeakMap
  // beside the class cost a table insertion per lock and work in every GC.
  readonly #secret: string;

  static {
    readSecret = (lock) => lock.#secret;
  }

  /** Created by `Redlock` (`acquire`, `using`); not for user code. */
  constructor(owner: LockOwner, init: LockInit) {
    this.#owner = owner;
    this.id = init.id;
    this.resources = init.resources;
    this.fencingToken = init.fencingToken;
    this.attempts = init.attempts;
    this.limit = init.limit;
    this.mode = init.mode;
    this.ttlMs = init.ttl;
    this.expiry = init.expiresAt;
    this.threshold = init.threshold;
    this.maxExtensions = init.maxExtensions;
    this.#secret = init.value;
  }

  /** The ttl of the last acquire or extend, ms. */
  get ttl(): number {
    return this.ttlMs;
  }

  /** Milliseconds for which mutual exclusion still holds (0 once expired, released or lost). */
  get validity(): number {
    if (!this.checkExpiry()) return 0;
    return Math.max(0, Math.floor(this.expiry - performance.now()));
  }

  /** Wall-clock estimate of the end of validity, ms since the epoch. */
  get expiresAt(): number {
    return Date.now() + this.validity;
  }

  /**
   * Whether mutual exclusion still holds, read from the clock now: after a
   * pause of the process (GC, SIGSTOP) longer than the validity this is false
   * at once, before any timer had a chance to run, and the lock is then
   * declared lost (its `signal` aborts).
   */
  get isHeld(): boolean {
    return this.checkExpiry();
  }

  get isLost(): boolean {
    this.checkExpiry();
    return this.state === 'lost';
  }

  /**
   * Throws `LockLostError` unless the lock is held right now (see `isHeld`).
   * Call it just before a side effect. It narrows the window, it cannot close
   * it: the process may pause right after it returns, so only a store that
   * checks `fencingToken` protects the resource.
   */
  assertHeld(): void {
    if (this.checkExpiry()) return;
    throw new LockLostError(this.resources, this.state === 'released' ? 'released' : (this.lostReason ?? 'expired'));
  }

  /** @internal Past its validity while still marked held (no side effect: the client's sweep reads it). */
  get overdue(): boolean {
    return this.state === 'held' && this.expiry <= performance.now();
  }

  /** @internal Extended automatically, so kept by running work (close() waits for it). */
  get autoExtends(): boolean {
    return this.autoExtending && this.state === 'held';
  }

  /** Extensions made so far. */
  get extensions(): number {
    return this.extensionCount;
  }

  /**
   * Fires when the lock is lost: its validity ran out without a successful
   * extension, or the nodes no longer have its keys. Its `reason` is a
   * `LockLostError`. A release does not fire it.
   */
  get signal(): AbortSignal {
    this.checkExpiry();
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.state === 'lost') this.controller.abort(new LockLostError(this.resources, this.lostReason ?? 'expired'));
      else this.armExpiry();
    }
    return this.controller.signal;
  }

  /**
   * Emits the `LockLostError` once if the lock is lost, then completes:
   * `lock.lost$.subscribe((error) => ...)`. RxJS's `from()` accepts it too.
   */
  readonly lost$ = new LostStream(() => this.signal);

  /** Extends the lock to `ttl` ms from now (default: its last ttl) on a quorum of nodes. */
  extend(ttl?: number): Promise<Lock> {
    return this.#owner.extend(this, ttl);
  }

  /** Deletes this holder's keys on every node. Idempotent. */
  release(): Promise<void> {
    return this.#owner.release(this);
  }

  /**
   * Lets the lock run out `ms` from now instead of deleting it: sets the keys'
   * ttl to `ms` on a quorum and stops extending. Keeps a short run exclusive for
   * at least that long (schedulers on several hosts firing the same tick).
   */
  expireAfter(ms: number): Promise<void> {
    return this.#owner.expireAfter(this, ms);
  }

  /**
   * `await using lock = await redlock.acquire(...)`: released when the block
   * exits, however it exits. As with `Redlock.using`, a failed release does not
   * replace the block's own error or result (it is reported as a `released`
   * event with fewer than a quorum confirmed; the keys expire with the ttl).
   */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.release().catch(() => undefined);
  }

  /**
   * What logs and `JSON.stringify` show: public facts, never the secret value. A
   * permit shows its `limit` or `mode` too (a logged permit says what it is); a
   * mutex shows no empty fields for them.
   */
  toJSON() {
    const { id, resources, validity, fencingToken, state, limit, mode } = this;
    if (limit !== undefined) return { id, resources, validity, fencingToken, state, limit };
    if (mode !== undefined) return { id, resources, validity, fencingToken, state, mode };
    return { id, resources, validity, fencingToken, state };
  }

  /** `console.log(lock)`, `util.inspect` and Nest's loggers show `toJSON()`, whatever the depth. */
  [inspect.custom](_depth: number, options: object): string {
    return `Lock ${inspect(this.toJSON(), Object.assign({}, options, { depth: 2 }))}`;
  }

  /** @internal Records a successful extension. */
  extended(ttl: number, expiresAt: number): void {
    this.ttlMs = ttl;
    this.expiry = expiresAt;
    this.extensionCount++;
    if (this.controller) this.armExpiry();
    if (this.autoExtending) this.scheduleExtension();
  }

  /** @internal Marks the lock released and stops its timers; false when it already was. */
  markReleased(): boolean {
    if (this.state !== 'held') return false;
    this.state = 'released';
    this.stopTimers();
    return true;
  }

  /** @internal Marks the lock lost, fires its signal; false when it already was released or lost. */
  markLost(reason: LostReason): boolean {
    if (this.state !== 'held') return false;
    this.state = 'lost';
    this.lostReason = reason;
    this.stopTimers();
    this.controller?.abort(new LockLostError(this.resources, reason));
    return true;
  }

  /** @internal Keeps the lock extended until it is released or lost. */
  startAutoExtend(): void {
    if (this.autoExtending || this.state !== 'held') return;
    this.autoExtending = true;
    this.armExpiry();
    this.scheduleExtension();
  }

  private scheduleExtension(delay = this.expiry - performance.now() - this.ttlMs * this.threshold): void {
    clearTimeout(this.extendTimer);
    if (this.state !== 'held' || this.extensionCount >= this.maxExtensions) return;
    // Timers keep at most MAX_DELAY: a later extension is reached in steps.
    if (delay > MAX_DELAY) {
      this.extendTimer = setTimeout(() => this.scheduleExtension(), MAX_DELAY);
      this.extendTimer.unref();
      return;
    }
    this.extendTimer = setTimeout(() => this.autoExtend(), Math.max(0, delay));
    this.extendTimer.unref();
  }

  private autoExtend(): void {
    this.#owner.extend(this).then(
      () => undefined,
      (error: LockError) => {
        if (this.state !== 'held') return;
        if (error.code === 'LOCK_LOST') return; // the owner marked it lost already
        this.#owner.extendFailed(this, error);
        // Try again soon while the lock may still be valid; expiry ends it otherwise.
        this.scheduleExtension(Math.min(Math.max(10, this.validity / 4), 1000));
      },
    );
  }

  /** One timer per watched lock declares it lost at the end of its validity. */
  private armExpiry(): void {
    clearTimeout(this.expiryTimer);
    if (this.state !== 'held') return;
    this.expiryTimer = setTimeout(
      () => {
        if (this.state !== 'held') return;
        if (this.expiry <= performance.now() + 1) this.#owner.lost(this, 'expired');
        else this.armExpiry(); // the timer fired early, or the lock was extended meanwhile
      },
      Math.min(MAX_DELAY, Math.max(0, this.expiry - performance.now())),
    );
    this.expiryTimer.unref();
  }

  /**
   * True while held. A held lock found past its validity is declared lost here
   * and now (its owner emits `lost`, its signal aborts), not only when its
   * expiry timer gets to run: after a long pause, code that reads the lock
   * runs before that timer.
   */
  private checkExpiry(): boolean {
    if (this.state !== 'held') return false;
    if (this.expiry > performance.now()) return true;
    this.#owner.lost(this, 'expired');
    return false;
  }

  private stopTimers(): void {
    clearTimeout(this.expiryTimer);
    clearTimeout(this.extendTimer);
    this.expiryTimer = this.extendTimer = undefined;
  }
}
