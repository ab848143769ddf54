import { Inject, Injectable } from '@nestjs/common';
import { inspect } from 'node:util';
import { Observable, Subject } from 'rxjs';
import {
  QuorumUnreachableError,
  ClientClosedError,
  ResourceBusyError,
  type Lock,
  type AcquireOptions,
  type ResourceInspection,
  type ListOptions,
  type LockListing,
  type ForceReleaseOptions,
  type ForceReleaseResult,
  Redlock,
} from '../core/index.js';
import { checkAcquireOptions, validateResources } from '../core/layers.js';
import { endNesting, heldInScope, heldLocks, lockScope, runNested, withLock } from './lock-context.js';
import { ofLockEvent, type RedlockEvent } from './lock-events.js';
import { MethodAttribution, takingFor } from './method-attribution.js';
import type { LockedMetadata } from './locked.metadata.js';
import { runLocked } from './locked.runner.js';
import { redlockLogger } from './redlock.logger.js';
import { skipsWhenBusy, type ResolvedBusy } from './busy.js';
import type { RedlockModuleOptions } from './redlock-module-options.interface.js';
import { REDLOCK_MODULE_OPTIONS } from './redlock.module-definition.js';

/** What `tryAcquire` adds to the caller's options (see eslint.config.mjs on spreads). */
const NO_RETRIES = Object.freeze({ retryCount: 0 });

/**
 * Locks in code, with the same behaviour as `@Locked`; and the stream of lock
 * events.
 *
 * @example
 * constructor(private readonly locks: LockService) {}
 * await this.locks.using(`invoice:${id}`, 10_000, async (lock) => {
 *   await this.invoices.issue(id, { fencingToken: lock.fencingToken, signal: lock.signal });
 * });
 */
@Injectable()
// Its @Locked side (LockedRunner, LockTaker) is internal: checked where it is registered and called, not
// declared here, so that the published declarations (stripInternal) stay consistent.
export class LockService {
  private readonly subject = new Subject<RedlockEvent>();
  private readonly unsubscribe: () => void;
  private readonly logger: ReturnType<typeof redlockLogger>;
  /** @internal Which `@Locked` method an event is about (for bounded metric attributes). */
  readonly attribution = new MethodAttribution();
  /** Locks left to expire after a short `@Locked` run: lock id -> ms their keys stay. */
  private readonly expiring = new Map<string, number>();

  /** Every lock event of this module's client, and `skipped` runs of `@Locked` methods. */
  readonly events$: Observable<RedlockEvent> = this.subject.asObservable();
  /** Locks found lost (validity ran out, keys gone): their signals have fired. */
  readonly lost$ = this.events$.pipe(ofLockEvent('lost'));

  /** The module's options, whose nodes may carry passwords: truly private. */
  readonly #options: RedlockModuleOptions;

  constructor(
    /** The quorum client, for what this service does not wrap. */
    readonly client: Redlock,
    @Inject(REDLOCK_MODULE_OPTIONS) options: RedlockModuleOptions,
  ) {
    this.#options = options;
    this.logger = redlockLogger(options);
    this.unsubscribe = client.subscribe((event) => {
      this.attribution.before(event);
      this.subject.next(event);
      this.attribution.after(event);
    });
  }

  /** Logs show the client's summary, never the module's options. */
  [inspect.custom](_depth: number, options: object): string {
    return `LockService { client: ${inspect(this.client, options)} }`;
  }

  /** Acquires with the client's retries (see `Redlock.acquire`). Release it in a `finally`. */
  acquire(resources: string | readonly string[], ttl?: number, options?: AcquireOptions): Promise<Lock> {
    return this.client.acquire(resources, ttl, options);
  }

  /** One attempt, no waiting: the lock, or `null` when another holder has it. */
  async tryAcquire(resources: string | readonly string[], ttl?: number, options?: AcquireOptions): Promise<Lock | null> {
    try {
      return await this.client.acquire(resources, ttl, Object.assign({}, options, NO_RETRIES));
    } catch (error) {
      if (error instanceof ResourceBusyError) return null;
      throw error;
    }
  }

  /**
   * Runs `fn` under a lock, extended automatically and always released; the
   * lock (with its `signal` and `fencingToken`) is passed to `fn` and is also
   * `current()` inside it. Re-entrant: if this call chain already holds the
   * resources, `fn` runs under that lock.
   */
  async using<T>(
    resources: string | readonly string[],
    ttl: number | undefined,
    fn: (lock: Lock) => Promise<T> | T,
    options?: Omit<AcquireOptions, 'autoExtend'>,
  ): Promise<T> {
    const names = validateResources(resources);
    const held = heldLocks();
    if (held.length > 0) {
      // Checked here only when nested: a nested call may run without the client, which checks them.
      const outer = heldInScope(names, held, checkAcquireOptions(options));
      if (outer) return runNested(outer, () => fn(outer.lock)) as Promise<T> | T;
    }
    // Released once the calls `fn` started under the lock and left running have settled too.
    return this.client.using(
      names,
      ttl,
      async (lock) => {
        try {
          return await withLock(lock, () => fn(lock));
        } finally {
          await endNesting(lock);
        }
      },
      options,
    );
  }

  /** What the nodes know of `resource`: its kind, held or not, where, how long, by whom (see `Redlock.inspect`). */
  inspect(resource: string): Promise<ResourceInspection> {
    return this.client.inspect(resource);
  }

  /**
   * For admin endpoints: the locks, semaphores and read-write locks whose
   * resource matches `pattern` (a Redis glob), quorum-merged, with their kind,
   * every holder's fingerprint, identity and ttl, the fencing counter and
   * waiters (see `Redlock.list`).
   */
  list(pattern?: string, options?: ListOptions): Promise<LockListing> {
    return this.client.list(pattern, options);
  }

  /**
   * For admin endpoints: evicts the holder of `resource` (of a semaphore or
   * read-write lock, one permit's) and raises its fencing counter (see
   * `Redlock.forceRelease`). Pass `holder` (the fingerprint `list` showed) so
   * that a lock taken by someone else since is left alone; among several
   * permits' holders it is required.
   */
  forceRelease(resource: string, options?: ForceReleaseOptions): Promise<ForceReleaseResult> {
    return this.client.forceRelease(resource, options);
  }

  /** The innermost lock held by the current call chain (`@Locked`, `using`), if any. */
  current(): Lock | undefined {
    return lockScope.getStore()?.locks.at(-1);
  }

  /** @internal A warning from the `@Locked` road, to the module's logger. */
  warn(message: string): void {
    this.logger?.warn(message);
  }

  /** @internal Runs a call of a `@Locked` method (see `runLocked`). */
  run(metadata: LockedMetadata, self: object, args: unknown[], original: (...args: unknown[]) => unknown): unknown {
    return runLocked(this, this.#options, metadata, self, args, original);
  }

  /**
   * @internal Takes the lock of a `@Locked` call; `null` when busy and the busy
   * mode says skip (a `skipped` event is emitted), a `ResourceBusyError` when it
   * says throw.
   */
  async take(resources: readonly string[], metadata: LockedMetadata, busy: ResolvedBusy): Promise<Lock | null> {
    try {
      const options = {
        autoExtend: true,
        limit: metadata.options.limit,
        mode: metadata.options.mode,
        ...(busy.mode === 'wait' ? { acquireTimeout: busy.wait, retryCount: 1_000_000 } : { retryCount: 0 }),
      };
      return await takingFor.run(metadata.method, () => this.client.acquire(resources, metadata.ttl, options));
    } catch (error) {
      // A method that skips when busy (a cron tick) skips when the nodes are down too, and
      // during shutdown (the client closed, the application still running): the client's
      // acquire-failed warning is its one log line, not the scheduler's stack dump. A queue
      // job is postponed for any of these reasons: a worker still fetching jobs while the
      // application closes must not fail them.
      const reason =
        error instanceof ResourceBusyError
          ? 'busy'
          : busy.kind === 'controller'
            ? undefined
            : error instanceof QuorumUnreachableError
              ? 'unreachable'
              : error instanceof ClientClosedError
                ? 'closed'
                : undefined;
      if (!reason || !skipsWhenBusy(busy)) throw error;
      this.subject.next({ type: 'skipped', at: Date.now(), resources, method: metadata.method, reason });
      return null;
    }
  }

  /**
   * @internal Ends a `@Locked` call's lock without failing the call: released,
   * or left to expire at `lockAtLeastFor` after it started (or at `keepUntil`).
   */
  settle(lock: Lock, metadata: LockedMetadata, keepUntil?: number): void {
    // Calls this one started under its lock and left running (an event handler) keep it.
    void endNesting(lock).then(() => this.end(lock, metadata, keepUntil));
  }

  private end(lock: Lock, metadata: LockedMetadata, keepUntil?: number): void {
    const atLeast = metadata.options.lockAtLeastFor;
    const now = Date.now();
    const remaining = Math.max(atLeast === undefined ? 0 : atLeast - (now - lock.acquiredAt), (keepUntil ?? 0) - now);
    if (remaining >= 1) this.expiring.set(lock.id, Math.ceil(remaining));
    const done = remaining >= 1 ? lock.expireAfter(remaining) : lock.release();
    done
      .catch((error: Error) => this.logger?.warn(`Could not release ${metadata.method}'s lock: ${error.message}`))
      .finally(() => this.expiring.delete(lock.id));
  }

  /** @internal For the log: how long the keys of a lock settled by `lockAtLeastFor` stay after its run, ms. */
  leftToExpire(lockId: string): number | undefined {
    return this.expiring.get(lockId);
  }

  /** @internal Called by the module after the client closed, so shutdown's `released` events are seen. */
  complete(): void {
    this.unsubscribe();
    this.subject.complete();
  }
}
