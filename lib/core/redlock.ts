import { randomBytes } from 'node:crypto';
import { inspect } from 'node:util';
import { AcquireLoop } from './acquire-loop.js';
import { planAcquire, type PlanContext } from './acquire-plan.js';
import { Closing } from './closing.js';
import { ClientClosedError } from './errors/client-closed.error.js';
import { InvalidArgumentError } from './errors/invalid-argument.error.js';
import { LockLostError, type LostReason } from './errors/lock-lost.error.js';
import type { LockError } from './errors/lock.error.js';
import { QuorumUnreachableError } from './errors/quorum-unreachable.error.js';
import type { LockEvent, LockEventListener } from './events.js';
import { checkHolder, forceRelease, type ForceReleaseOptions, type ForceReleaseResult } from './force-release.js';
import { HeldLocks } from './held-locks.js';
import { encodeIdentity } from './holder.js';
import { inspectResource, type ResourceInspection } from './inspection.js';
import { KeyLayout, validateResources } from './keys.js';
import { checkListLimit, checkPattern, listLocks, type ListOptions, type LockListing } from './listing.js';
import { Lock, secretOf } from './lock.js';
import type { LockNode } from './node.js';
import { pingNodes, type NodeHealth } from './node-health.js';
import { buildNodes } from './node-specs.js';
import { CONNECT_WAIT, connectQuorum, watchNodes } from './node-watch.js';
import {
  checkAcquireOptions,
  checkDelay,
  checkTtl,
  resolveOptions,
  type AcquireOptions,
  type RedlockOptions,
  type ResolvedOptions,
} from './options.js';
import type { AttemptReport } from './outcome.js';
import { defaultNodeTimeout, quorumOf, validityOf } from './quorum.js';
import { handOverFloor } from './fencing-floor.js';
import { RandomPool } from './random-pool.js';
import { SlotMemory } from './slot-memory.js';
import { callRound, type NodeSet } from './round.js';
import { EXTEND, RELEASE, SLOT_EXTEND } from './scripts.js';
import { doneVerdict, heldVerdict } from './verdicts.js';
import { WakeNotifier } from './wake-notifier.js';

/** Longest wait for a node to acknowledge QUIT on close, ms. */
const CLOSE_TIMEOUT = 500;
/** What `using` adds to the caller's options (see eslint.config.mjs on spreads). */
const AUTO_EXTEND = Object.freeze({ autoExtend: true });

/**
 * The Redlock quorum client over N independent Redis-protocol nodes.
 *
 * Every operation is one script sent to all nodes at once; it is decided as
 * soon as a quorum (floor(N/2)+1) agreed or can no longer agree, and a node
 * that does not answer within the per-node timeout counts as a no. A lock
 * holds only with a quorum and a positive validity (ttl - elapsed - drift);
 * a failed attempt is undone on every node before any retry.
 *
 * @example
 * const redlock = new Redlock({ nodes: ['redis://a:6379', 'redis://b:6379', 'redis://c:6379'] });
 * await redlock.using('report:daily', 10_000, async (lock) => {
 *   await buildReport({ signal: lock.signal, fencingToken: lock.fencingToken });
 * });
 * await redlock.close();
 */
// The owner side of its locks (LockOwner) is internal: checked where a Lock is made, not declared here,
// so that the published declarations (stripInternal) stay consistent.
export class Redlock {
  /** Votes needed: floor(N/2)+1. */
  readonly quorum: number;
  // Secret-bearing fields are truly private (#): no inspect, logger or serializer
  // reaches the nodes' clients (their passwords) or the random pool (lock values).
  readonly #nodes: readonly LockNode[];
  readonly #set: NodeSet;
  private readonly options: ResolvedOptions;
  private readonly listeners = new Set<LockEventListener>();
  private readonly locks = new HeldLocks();
  private readonly closing = new Closing();
  /** The longest ttl this client has acquired or extended with (0 before its first lock): the 'auto' restart guard's window. */
  private longestTtl = 0;
  private readonly notifier: WakeNotifier;
  private readonly layout: KeyLayout;
  private readonly detach: (() => void)[];
  private connecting: Promise<void> | undefined;
  /** Names this client in its waiters' ids and its wake channel (random: two processes never share one). */
  private readonly clientId = randomBytes(6).toString('hex');
  /** `<prefix>wake:`, followed by a client id: the channel a release wakes that client's waiter on. */
  private readonly wakePrefix: string;
  /** What every acquire plan is made from (with the random pool: truly private). */
  readonly #planning: PlanContext;
  private readonly loop: AcquireLoop;

  constructor(options: RedlockOptions) {
    this.options = resolveOptions(options);
    const identity = encodeIdentity(options.identity);
    this.#nodes = buildNodes(options.nodes);
    let clustered: boolean;
    try {
      clustered = this.#nodes.some((n) => n.connection.isCluster);
      this.layout = new KeyLayout(this.options.prefix, clustered);
    } catch (error) {
      for (const node of this.#nodes) void node.close(0);
      throw error;
    }
    this.quorum = quorumOf(this.#nodes.length);
    this.#set = { nodes: this.#nodes, quorum: this.quorum };
    this.wakePrefix = `${this.options.prefix}wake:`;
    this.notifier = new WakeNotifier(this.#nodes, this.wakePrefix, this.clientId, (event) => this.emit(event));
    const { options: resolved, layout, clientId, wakePrefix } = this;
    const nodeTimeoutFor = (ttl: number, override?: number) => this.nodeTimeoutFor(ttl, override);
    this.#planning = {
      options: resolved,
      layout,
      clustered,
      clientId,
      wakePrefix,
      identity,
      random: new RandomPool(),
      slotMemory: new SlotMemory(),
      nodeTimeoutFor,
    };
    this.loop = new AcquireLoop({
      set: this.#set,
      owner: this,
      options: this.options,
      notifier: this.notifier,
      closing: this.closing,
      locks: this.locks,
      wakePrefix: this.wakePrefix,
      connecting: () => this.connecting,
      emit: (event) => this.emit(event),
      listening: () => this.listeners.size > 0,
    });
    if (options.onEvent) this.listeners.add(options.onEvent);
    this.detach = watchNodes(this.#nodes, {
      restartGuard: this.options.restartGuard,
      autoWindow: () => this.longestTtl || this.options.ttl,
      emit: (event) => this.emit(event),
    });
    this.connecting = new Promise<void>((resolve) =>
      connectQuorum(this.#nodes, this.quorum, () => {
        this.connecting = undefined;
        resolve();
      }),
    );
    // A client whose calls wait by default will wait sooner or later: its wake
    // channel is subscribed up front (calls that wait only by their own options
    // subscribe on their first wait).
    if (this.options.fairWaiting && this.options.retryCount > 0) this.notifier.start();
  }

  /** `host:port/db` of each node, in order; never credentials. */
  get nodeLabels(): readonly string[] {
    return this.#nodes.map((n) => n.label);
  }

  /**
   * PINGs every node at once, for health checks: a node silent after `timeout`
   * ms (default: the per-node timeout of a lock with the default ttl) is
   * reported down. Never rejects.
   *
   * @example
   * const healthy = (await redlock.ping(500)).filter((n) => n.status === 'up').length >= redlock.quorum;
   */
  ping(timeout?: number): Promise<NodeHealth[]> {
    return pingNodes(this.#nodes, timeout === undefined ? this.nodeTimeoutFor(this.options.ttl) : checkDelay(timeout, 'timeout'));
  }

  /** Locks this client holds now, and its acquire calls waiting for a busy resource (refused once, not done yet): for gauges. */
  get stats(): { readonly held: number; readonly waiting: number } {
    return { held: this.locks.size, waiting: this.loop.waiting };
  }

  /**
   * Resolves once a quorum of nodes is connected, or every node has connected
   * or failed once. `acquire` waits for it on first use, so that connection
   * set-up does not count against the per-node timeout; never rejects.
   */
  ready(): Promise<void> {
    return this.connecting ?? Promise.resolve();
  }

  /**
   * For the operators' calls, which count every node's answer: every node
   * connected or failed, or CONNECT_WAIT passed. Not `ready()`, which ends at
   * a quorum (a node still connecting then refuses the call, and is counted
   * out though healthy) and never ends while most nodes hang.
   */
  private async connected(): Promise<void> {
    await this.closing.settles(Promise.all(this.#nodes.map((node) => node.connect())), CONNECT_WAIT, undefined);
  }

  /** What logs show of the client: its nodes' labels and quorum, never a client or a secret. */
  [inspect.custom](_depth: number, options: object): string {
    const shown = { nodes: this.nodeLabels, quorum: this.quorum, held: this.locks.size, closed: this.closing.isClosed };
    return `Redlock ${inspect(shown, Object.assign({}, options, { depth: 2 }))}`;
  }

  /** Adds a listener for every lock event; returns a function that removes it. */
  subscribe(listener: LockEventListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Acquires `resources` (one name or several, all or none) for `ttl` ms.
   * Rejects with `ResourceBusyError` when another holder keeps it through all
   * retries, `QuorumUnreachableError` when too few nodes answer, and
   * `LockAbortedError` when `options.signal` fires.
   */
  acquire(resources: string | readonly string[], ttl?: number, options?: AcquireOptions): Promise<Lock> {
    let acquiring: Promise<Lock>;
    try {
      // During shutdown (a queue worker still fetching jobs), not a misuse: the error a waiting acquire gets.
      if (this.closing.isClosed) throw new ClientClosedError(validateResources(resources));
      acquiring = this.acquireLock(resources, ttl, checkAcquireOptions(options));
    } catch (error) {
      return Promise.reject(error as Error);
    }
    return this.closing.track(acquiring);
  }

  private acquireLock(resources: string | readonly string[], ttl: number | undefined, options: AcquireOptions): Promise<Lock> {
    const plan = planAcquire(this.#planning, resources, ttl, options);
    if (plan.ttl > this.longestTtl) this.longestTtl = plan.ttl;
    return this.loop.run(plan);
  }

  /**
   * Runs `routine` under a lock on `resources`, extending it automatically while
   * the routine runs and releasing it when the routine settles. The routine's
   * result or error is passed through; a failed release does not replace it
   * (it is reported as an event). `lock.signal` fires if the lock is lost.
   */
  async using<T>(
    resources: string | readonly string[],
    ttl: number | undefined,
    routine: (lock: Lock) => Promise<T> | T,
    options: Omit<AcquireOptions, 'autoExtend'> = {},
  ): Promise<T> {
    if (typeof routine !== 'function') throw new InvalidArgumentError('routine', 'a function', routine);
    const lock = await this.acquire(resources, ttl, Object.assign({}, options, AUTO_EXTEND));
    try {
      return await routine(lock);
    } finally {
      await lock.release().catch(() => undefined);
    }
  }

  /**
   * Extends a held lock to `ttl` ms from now on a quorum of nodes. Rejects with
   * `LockLostError` when the lock expired, was released, or a majority no longer
   * has its keys (it is then never re-acquired), and with
   * `QuorumUnreachableError` when too few nodes answered (the lock stays valid
   * until `lock.validity` ends).
   */
  async extend(lock: Lock, ttl?: number): Promise<Lock> {
    const newTtl = checkTtl(ttl ?? lock.ttl);
    if (newTtl > this.longestTtl) this.longestTtl = newTtl;
    if (lock.isLost) throw new LockLostError(lock.resources, 'expired');
    const entry = this.locks.releasableOf(lock);
    if (!entry || !this.locks.has(lock)) throw new LockLostError(lock.resources, 'released');
    if (!lock.isHeld) {
      this.lost(lock, 'expired');
      throw new LockLostError(lock.resources, 'expired');
    }
    const t0 = performance.now();
    const value = secretOf(lock);
    const call =
      entry.permit?.extend(newTtl) ??
      (entry.slot
        ? SLOT_EXTEND.call([entry.keys.locks[0]!, entry.slot.mark], { value, ttl: newTtl, limit: entry.slot.limit })
        : EXTEND.call(entry.keys.locks, { value, ttl: newTtl }));
    const { quorum } = this;
    const round = await callRound(call, heldVerdict, {
      nodes: this.#nodes,
      quorum,
      timeout: this.nodeTimeoutFor(newTtl),
      until: 'quorum',
    });
    const attempt: AttemptReport = { attempt: 1, elapsed: round.elapsed, nodes: round.reports };
    const validity = validityOf(newTtl, round.elapsed, this.options.driftFactor);
    if (!this.locks.has(lock)) throw new LockLostError(lock.resources, 'released');
    if (round.yes.length >= quorum && validity > 0) {
      lock.extended(newTtl, t0 + round.elapsed + validity);
      this.emit({
        type: 'extended',
        at: Date.now(),
        lockId: lock.id,
        resources: lock.resources,
        ttl: newTtl,
        validity: Math.floor(validity),
        elapsed: round.elapsed,
        extensions: lock.extensions,
      });
      return lock;
    }
    // Lost once too few nodes are left that could still hold it.
    const gone = quorum;
    if (round.reports.filter((r) => r.outcome === 'not-held').length >= gone) {
      this.lost(lock, 'keys-gone');
      throw new LockLostError(lock.resources, 'keys-gone', attempt);
    }
    throw new QuorumUnreachableError('extend', lock.resources, [attempt], quorum);
  }

  /**
   * Deletes the lock's keys on every node (compare-and-delete: never another
   * holder's); resolves once a quorum confirmed. Idempotent. Rejects with
   * `QuorumUnreachableError` when fewer than a quorum of nodes confirmed; the
   * keys then expire at the end of the ttl.
   */
  async release(lock: Lock): Promise<void> {
    const held = this.locks.releasableOf(lock);
    if (!held) return;
    this.locks.released(lock);
    // A lost lock is released too: an extension that reached the nodes late may
    // have kept its keys there, and a compare-and-delete is always safe.
    const wasHeld = this.locks.forget(lock);
    const heldFor = Date.now() - lock.acquiredAt;
    lock.markReleased();
    if (held.slot) this.#planning.slotMemory.released(lock.resources[0]!, held.slot.index);
    const leaving = !held.unconfirmed || held.unconfirmed.count > 0 ? held.queuedAs : '';
    // A semaphore's slot always: its release is what drops the marker with the last permit (see slot-scripts.ts).
    // A slot's hand-over token: the release's floor keeps the nodes' tokens alike (see GRANT); a mutex's
    // counters do not drift apart that way, and its release stays as short as it was.
    const floor = held.slot && this.options.fencingRetention > 0 ? handOverFloor() : undefined;
    const fair = this.options.fairWaiting || held.slot ? { prefixLength: this.layout.prefixLength, leaving, floor } : undefined;
    const call =
      held.permit?.release({ member: true, leaving, skip: '' }) ?? RELEASE.call(held.keys.locks, { value: secretOf(lock), fair });
    const round = await callRound(call, doneVerdict, {
      nodes: this.#set.nodes,
      quorum: this.#set.quorum,
      timeout: this.nodeTimeoutFor(lock.ttl),
      // Done for the caller once a quorum deleted: the rest are on their way (one
      // write each, sent at once) and a slow or hung node is not waited for.
      until: 'quorum',
      targets: held.sentTo,
    });
    if (!wasHeld) return; // lost already: reported then, and best effort now
    if (this.listeners.size > 0) {
      this.emit({
        type: 'released',
        at: Date.now(),
        lockId: lock.id,
        resources: lock.resources,
        heldFor,
        elapsed: round.elapsed,
        confirmed: round.yes.length,
      });
    }
    if (round.yes.length < this.quorum) {
      throw new QuorumUnreachableError(
        'release',
        lock.resources,
        [{ attempt: 1, elapsed: round.elapsed, nodes: round.reports }],
        this.quorum,
      );
    }
  }

  /** See `Lock.expireAfter`. Falls back to a release when `ms` is below 1. */
  async expireAfter(lock: Lock, ms: number): Promise<void> {
    if (ms < 1) return this.release(lock);
    await this.extend(lock, checkTtl(Math.ceil(ms), 'ms'));
    if (!this.locks.forget(lock)) return;
    this.locks.released(lock);
    lock.markReleased();
    this.emit({
      type: 'released',
      at: Date.now(),
      lockId: lock.id,
      resources: lock.resources,
      heldFor: Date.now() - lock.acquiredAt,
      elapsed: 0,
      confirmed: this.quorum, // the extension that set the remaining ttl reached a quorum
    });
  }

  /**
   * What the nodes know of `resource`: how it is held (a mutex, a semaphore,
   * a read-write lock), whether a quorum holds it, on which nodes, for how
   * long, by which holders (a fingerprint each, and the identity it recorded
   * with the `identity` option), its fencing counter and waiters.
   * Read-only; never shows a lock value.
   */
  async inspect(resource: string): Promise<ResourceInspection> {
    const [name] = validateResources(resource);
    await this.connected();
    return inspectResource(this.#set, this.layout, name!, this.options.nodeTimeout ?? defaultNodeTimeout(this.options.ttl));
  }

  /**
   * The locks whose resource matches `pattern` (a Redis glob, e.g. `'orders:*'`),
   * as `inspect` describes each: found with SCAN, bounded by `limit` (default
   * 100) and a per-node budget (`truncated` says when more may match).
   */
  async list(pattern = '*', options: ListOptions = {}): Promise<LockListing> {
    const [match, limit] = [checkPattern(pattern), checkListLimit(options.limit)];
    await this.connected();
    return listLocks(this.#set, this.layout, match, limit, this.nodeTimeoutFor(this.options.ttl));
  }

  /**
   * For operators: evicts the holder of `resource` (only `options.holder`, a
   * fingerprint, if given; of a semaphore or read-write lock, one permit's
   * holder, which must be named when there are several) and raises its
   * fencing counter, so that fenced stores refuse the evicted holder once they
   * saw the returned `fencingToken` or the next holder's; the evicted holder's
   * next extension fails with `LockLostError` ('keys-gone'), which its
   * automatic extension reports as lost.
   */
  async forceRelease(resource: string, options: ForceReleaseOptions = {}): Promise<ForceReleaseResult> {
    const [name] = validateResources(resource);
    const holder = checkHolder(options.holder);
    await this.connected();
    const { layout, wakePrefix } = this;
    const timeout = this.nodeTimeoutFor(this.options.ttl);
    return forceRelease({ set: this.#set, layout, wakePrefix, retention: this.options.fencingRetention, timeout }, name!, holder);
  }

  /**
   * Shuts the client down without pulling a lock from under running work:
   * acquires under way reject with `ClientClosedError` (undone on the nodes);
   * locks still held are waited for, up to `grace` ms (default: the
   * `shutdownGrace` option), while their automatic extensions go on; a lock
   * still held after that is marked lost (its `signal` aborts, `lost` is
   * emitted) before its keys are deleted. Then the connections this client
   * opened are closed (clients passed in stay open). Further calls to
   * `acquire` throw; calling it again returns the same promise.
   */
  close(options: { grace?: number } = {}): Promise<void> {
    const grace = this.closing.isClosed || options.grace === undefined ? this.options.shutdownGrace : checkDelay(options.grace, 'grace', 0);
    return this.closing.close(() => this.shutDown(grace));
  }

  private async shutDown(grace: number): Promise<void> {
    await this.locks.drain(performance.now() + grace);
    const left = this.locks.list();
    for (const lock of left) this.lost(lock, 'shutdown');
    await Promise.all(left.map((lock) => this.release(lock).catch(() => undefined)));
    this.notifier.close();
    for (const detach of this.detach) detach();
    await Promise.all(this.#nodes.map((node) => node.close(CLOSE_TIMEOUT)));
  }

  /** @internal LockOwner: a lock found lost. */
  lost(lock: Lock, reason: LostReason): void {
    if (!lock.markLost(reason)) return;
    this.locks.forget(lock);
    this.emit({ type: 'lost', at: Date.now(), lockId: lock.id, resources: lock.resources, reason });
  }

  /** @internal LockOwner: an automatic extension failed without losing the lock yet. */
  extendFailed(lock: Lock, error: LockError): void {
    this.emit({
      type: 'extend-failed',
      at: Date.now(),
      lockId: lock.id,
      resources: lock.resources,
      code: error.code,
      validity: lock.validity,
    });
  }

  private nodeTimeoutFor(ttl: number, override?: number): number {
    if (override !== undefined) return checkDelay(override, 'nodeTimeout');
    return this.options.nodeTimeout ?? defaultNodeTimeout(ttl);
  }

  private emit(event: LockEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch {
        // A listener's failure must not break the lock path.
      }
    }
  }
}
