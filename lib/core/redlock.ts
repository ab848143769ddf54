import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { inspect } from 'node:util';
import { ClientClosedError } from './errors/client-closed.error.js';
import { InvalidArgumentError } from './errors/invalid-argument.error.js';
import { LockAbortedError } from './errors/lock-aborted.error.js';
import { LockLostError, type LostReason } from './errors/lock-lost.error.js';
import type { LockError } from './errors/lock.error.js';
import { QuorumUnreachableError } from './errors/quorum-unreachable.error.js';
import { ResourceBusyError } from './errors/resource-busy.error.js';
import type { LockEvent, LockEventListener } from './events.js';
import { KeyLayout, validateResources, type LockKeys } from './keys.js';
import { encodeIdentity } from './holder.js';
import { inspectionOf, type ResourceInspection } from './inspection.js';
import { Lock, secretOf, type LockOwner } from './lock.js';
import { LockNode, type NodeSpec } from './node.js';
import { pingNodes, type NodeHealth } from './node-health.js';
import {
  checkAcquireOptions,
  checkDelay,
  checkTtl,
  MAX_DELAY,
  resolveOptions,
  resolveRetry,
  type AcquireOptions,
  type RedlockOptions,
  type ResolvedOptions,
} from './options.js';
import type { AttemptReport, NodeReport } from './outcome.js';
import { defaultNodeTimeout, quorumOf, retryDelayOf, validityOf } from './quorum.js';
import { callRound, type RoundResult, type Verdict } from './round.js';
import { ACQUIRE, CONFIRM_TOKEN, EXTEND, INSPECT, LEAVE_QUEUE, RELEASE, SET_NX, type AcquireArgs, type AcquireReply, type InspectReply } from './scripts.js';
import { RandomPool } from './random-pool.js';
import { Turn } from './turn.js';
import { judgeAttempt } from './judgement.js';
import { WakeNotifier } from './wake-notifier.js';
import { queuePosition } from './queue-position.js';

/** Longest wait for a node to acknowledge QUIT on close, ms. */
const CLOSE_TIMEOUT = 500;

/**
 * Longest wait of an acquire for the first connections, ms. Past it the round
 * is sent anyway, and nodes still connecting count as timeouts: a node that
 * accepts TCP but never answers must not hold the first acquire up.
 */
const CONNECT_WAIT = 2000;

/** Retries of a split vote past the caller's own, and their jitter, ms (see `judgeAttempt`). */
const SPLIT_RETRIES = 5;
const SPLIT_JITTER = 50;

/** Below this many held locks, expired ones are not swept (see `Redlock.sweep`). */
const SWEEP_MIN = 64;

/** Bytes of randomness in a lock's secret value (160 bits). */
const VALUE_BYTES = 20;

// A yes from a node that restarted inside the restart-guard window is not counted:
// it may have lost another holder's key.
const acquireVerdict = ({ taken, value }: AcquireReply, node: LockNode): Verdict => ({
  outcome: !taken ? 'busy' : node.excluded ? 'excluded' : 'ok',
  value,
});
const heldVerdict = (held: boolean, node: LockNode): Verdict => ({
  outcome: !held ? 'not-held' : node.excluded ? 'excluded' : 'ok',
});
const releaseVerdict = (): Verdict => ({ outcome: 'ok' });

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
export class Redlock implements LockOwner {
  /** Votes needed: floor(N/2)+1. */
  readonly quorum: number;
  // Secret-bearing fields are truly private (#): no inspect, logger or serializer
  // reaches the nodes' clients (their passwords) or the random pool (lock values).
  readonly #nodes: readonly LockNode[];
  private readonly options: ResolvedOptions;
  private readonly listeners = new Set<LockEventListener>();
  /** The locks held (neither released nor found lost), for close(). */
  private readonly held = new Set<Lock>();
  /**
   * Per lock not yet released, lost ones included (a lost lock's release still
   * deletes what is left of its keys): its keys, the nodes its acquire went to,
   * and its waiter id if it queued (RELEASE leaves the queues). Weak: a lock
   * dropped by its user takes its entry with it.
   */
  private readonly releasable = new WeakMap<Lock, { keys: LockKeys; sentTo: readonly boolean[]; queuedAs: string }>();
  /** Acquires under way, which close() lets finish (they undo and reject). */
  private readonly inFlight = new Set<Promise<unknown>>();
  /** Stops every wait under way, at close() (one entry per waiting acquire). */
  private readonly waits = new Set<() => void>();
  private closed: Promise<void> | undefined;
  /** Called when the last held lock leaves `held` (close() waits for it). */
  private emptied: (() => void) | undefined;
  /** The longest ttl this client has acquired or extended with (0 before its first lock): the 'auto' restart guard's window. */
  private longestTtl = 0;
  /** `held` size at which expired locks are swept out (see sweep()). */
  private sweepAt = SWEEP_MIN;
  private readonly notifier: WakeNotifier;
  private readonly layout: KeyLayout;
  private readonly detach: (() => void)[] = [];
  private connecting: Promise<void> | undefined;
  /** Appended to every lock value: the holder identity, if recorded. */
  private readonly identity: string;
  /** Names this client in its waiters' ids and its wake channel (random: two processes never share one). */
  private readonly clientId = randomBytes(6).toString('hex');
  readonly #random = new RandomPool();
  /** `<prefix>wake:`, followed by a client id: the channel a release wakes that client's waiter on. */
  private readonly wakePrefix: string;
  /**
   * Some node is a Redis Cluster. Its client may send a command again on its own
   * (a redirection, a failover), where a bare SET NX would then read its own key
   * as another holder's: with such a node, the client always sends the ACQUIRE
   * script, which knows its own value.
   */
  private readonly clustered: boolean;

  constructor(options: RedlockOptions) {
    this.options = resolveOptions(options);
    this.identity = encodeIdentity(options.identity);
    this.#nodes = buildNodes(options.nodes);
    try {
      this.clustered = this.#nodes.some((n) => n.kind === 'cluster');
      this.layout = new KeyLayout(this.options.prefix, this.clustered);
    } catch (error) {
      for (const node of this.#nodes) void node.close(0);
      throw error;
    }
    this.quorum = quorumOf(this.#nodes.length);
    this.wakePrefix = `${this.options.prefix}wake:`;
    this.notifier = new WakeNotifier(this.#nodes, `${this.wakePrefix}${this.clientId}`);
    if (options.onEvent) this.listeners.add(options.onEvent);
    for (const node of this.#nodes) {
      const report = (error: Error) =>
        this.emit({ type: 'node-error', at: Date.now(), node: node.label, message: error.message });
      node.client.on('error', report);
      this.detach.push(() => node.client.off('error', report));
      node.watchHung((silentFor) => this.emit({ type: 'node-hung', at: Date.now(), node: node.label, silentFor: Math.round(silentFor) }));
      // A cluster's INFO would come from any one of its shards: the guard covers standalone nodes.
      const guard = this.options.restartGuard;
      if (guard !== 0 && node.kind !== 'cluster') {
        this.detach.push(
          node.guardRestarts({
            // 'auto': as long as the longest lock this client took or extended may have lived.
            window: guard === 'auto' ? () => this.longestTtl || this.options.ttl : () => guard,
            atFirstContact: guard !== 'auto',
            failOpen: guard === 'auto',
            onRestart: (restarted, excludedFor) =>
              this.emit({ type: 'node-restarted', at: Date.now(), node: restarted.label, excludedFor }),
            onUnguardable: (unguarded, message) => this.emit({ type: 'node-error', at: Date.now(), node: unguarded.label, message }),
          }),
        );
      }
    }
    this.connecting = this.connect();
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

  /**
   * Resolves once a quorum of nodes is connected, or every node has connected
   * or failed once. `acquire` waits for it on first use, so that connection
   * set-up does not count against the per-node timeout; never rejects.
   */
  ready(): Promise<void> {
    return this.connecting ?? Promise.resolve();
  }

  private connect(): Promise<void> {
    return new Promise<void>((resolve) => {
      let up = 0;
      let settled = 0;
      const done = (ok: boolean) => {
        settled++;
        if (ok) up++;
        if (up >= this.quorum || settled === this.#nodes.length) {
          this.connecting = undefined;
          resolve();
        }
      };
      for (const node of this.#nodes) node.connect().then(done, () => done(false));
    });
  }

  /** What logs show of the client: its nodes' labels and quorum, never a client or a secret. */
  [inspect.custom](_depth: number, options: object): string {
    const shown = { nodes: this.nodeLabels, quorum: this.quorum, held: this.held.size, closed: this.closed !== undefined };
    return `Redlock ${inspect(shown, { ...options, depth: 2 })}`;
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
      this.assertOpen();
      acquiring = this.acquireLock(resources, ttl, checkAcquireOptions(options));
    } catch (error) {
      return Promise.reject(error as Error);
    }
    this.inFlight.add(acquiring);
    const forget = () => this.inFlight.delete(acquiring);
    acquiring.then(forget, forget);
    return acquiring;
  }

  private async acquireLock(resources: string | readonly string[], ttl: number | undefined, options: AcquireOptions): Promise<Lock> {
    const names = validateResources(resources);
    const lockTtl = checkTtl(ttl ?? this.options.ttl);
    if (lockTtl > this.longestTtl) this.longestTtl = lockTtl;
    // Below this the drift allowance alone leaves no validity: no attempt could succeed.
    if (validityOf(lockTtl, 0, this.options.driftFactor) < 1) {
      throw new InvalidArgumentError('ttl', `more than ${lockTtl - validityOf(lockTtl, 0, this.options.driftFactor)} ms (the drift allowance)`, lockTtl);
    }
    const retry = resolveRetry(options, this.options);
    const nodeTimeout = this.nodeTimeoutFor(lockTtl, options.nodeTimeout);
    const { signal } = options;
    const started = performance.now();
    const deadline = retry.acquireTimeout === undefined ? Infinity : started + retry.acquireTimeout;
    const retention = this.options.fencingRetention;
    const fair = this.options.fairWaiting;
    const keys = this.layout.forLock(names, retention > 0, fair);
    // One draw for both: the secret value, and the public id (unrelated bytes),
    // which doubles as the waiter id in the nodes' queues.
    const [secret, id] = this.#random.take(VALUE_BYTES + 8, (bytes, at) => [
      bytes.toString('base64url', at, at + VALUE_BYTES),
      bytes.toString('hex', at + VALUE_BYTES, at + VALUE_BYTES + 8),
    ]);
    const value = secret + this.identity;
    // A waiter's id names its client, whose channel the release wakes it on.
    const waiter = fair && retry.retryCount > 0 ? `${this.clientId}.${id}` : '';
    // A queue entry lives long enough to survive the wait until the next attempt.
    const entryTtl = 2 * (retry.retryDelay + retry.retryJitter + nodeTimeout) + 100;
    const acquireArgs: AcquireArgs = {
      value,
      ttl: lockTtl,
      fair: !fair ? undefined : waiter ? { join: { waiter, since: queuePosition(), entryTtl } } : {},
    };
    // The undo of a failed attempt: a waiter keeps its place, and its undo does not wake it.
    const undo = RELEASE.call(keys.release, { value, fair: fair ? { wakePrefix: this.wakePrefix, undoneBy: waiter } : undefined });
    // The plain protocol on one resource needs no script: the wire's floor.
    const plain = names.length === 1 && retention === 0 && !fair && !this.clustered;
    const attempts: AttemptReport[] = [];
    // This client's wake channel already subscribed (it waited before): watch from
    // the first attempt, so a release during it is not missed.
    let turn = waiter && this.notifier.isSubscribed ? new Turn(this.notifier, waiter, false) : undefined;
    if (this.connecting) await this.settles(this.connecting, Math.min(CONNECT_WAIT, deadline - performance.now()), signal);

    const fail = (error: LockError): never => {
      turn?.stop();
      // Any attempt a node refused queued this waiter there, turn or not.
      if (waiter && attempts.length > 0) this.leaveQueue(keys, waiter, nodeTimeout, queuedOn);
      this.emit(
        error.code === 'RESOURCE_BUSY'
          ? { type: 'busy', at: Date.now(), resources: names, attempts: attempts.length, elapsed: performance.now() - started }
          : {
              type: 'acquire-failed',
              at: Date.now(),
              resources: names,
              code: error.code,
              attempts: attempts.length,
              elapsed: performance.now() - started,
            },
      );
      throw error;
    };

    let splitRetries = 0;
    /** The nodes any attempt went to: where a waiter may be queued. */
    const queuedOn: boolean[] = this.#nodes.map(() => false);
    for (let attempt = 1; ; attempt++) {
      if (this.closed) fail(new ClientClosedError(names));
      if (signal?.aborted) fail(new LockAbortedError(names, signal.reason));
      const t0 = performance.now();
      const call = plain
        ? SET_NX.call(keys.acquire, acquireArgs)
        : ACQUIRE.call(keys.acquire, {
            ...acquireArgs,
            // The fencing token's floor: this clock in µs, one value for every node.
            fencing: retention > 0 ? { retention, floor: Date.now() * 1000 } : undefined,
          });
      const round = await callRound(call, acquireVerdict, {
        nodes: this.#nodes,
        quorum: this.quorum,
        timeout: nodeTimeout,
        until: 'quorum',
        // A NOSCRIPT answered after the node timeout gets no EVAL: the undo may be on its way.
        fallbackWithin: nodeTimeout,
      });
      round.sent.forEach((sent, i) => sent && (queuedOn[i] = true));
      let reports = round.reports;
      let token: number | undefined;
      let taken = round.yes.length >= this.quorum;
      if (taken && retention > 0) {
        const confirmed = await this.confirmToken(round, value, keys.confirm, nodeTimeout);
        token = confirmed.token;
        taken = confirmed.ok;
        reports = confirmed.reports;
      }
      const elapsed = performance.now() - t0;
      const validity = validityOf(lockTtl, elapsed, this.options.driftFactor);

      if (taken && validity > 0 && !signal?.aborted && !this.closed) {
        attempts.push({ attempt, elapsed, nodes: reports });
        turn?.stop();
        // A waiter stays in the queues while it holds the lock (the key keeps the
        // others out anyway) and leaves them in its release: no round of its own.
        // Only an attempt some node refused can have queued it.
        const queuedAs = waiter && (attempt > 1 || count(round.reports, 'busy') > 0) ? waiter : '';
        const lock = new Lock(this, {
          id,
          resources: names,
          value,
          ttl: lockTtl,
          expiresAt: t0 + elapsed + validity,
          fencingToken: retention > 0 ? token : undefined,
          attempts: attempt,
          threshold: this.options.threshold,
          maxExtensions: this.options.maxExtensions,
        });
        this.held.add(lock);
        if (this.held.size >= this.sweepAt) this.sweep();
        this.releasable.set(lock, { keys, sentTo: round.sent, queuedAs });
        if (options.autoExtend) lock.startAutoExtend();
        this.emit({
          type: 'acquired',
          at: Date.now(),
          lockId: lock.id,
          resources: names,
          ttl: lockTtl,
          validity: Math.floor(validity),
          attempts: attempt,
          elapsed: performance.now() - started,
          fencingToken: lock.fencingToken,
        });
        return lock;
      }

      // Undo wherever the attempt may have set keys: first hear every node out (those
      // still pending at an early decision answer within moments, a hung one within the
      // node timeout), so that a node that said busy, and set nothing, gets no undo. A
      // node that timed out gets one too: a late SET must not survive.
      await round.settled;
      const heard = round.late();
      const undoOn = round.sent.map((sent, i) => sent && heard[i]!.outcome !== 'busy');
      if (undoOn.includes(true)) {
        await callRound(undo, releaseVerdict, {
          nodes: this.#nodes,
          quorum: this.quorum,
          timeout: nodeTimeout,
          until: 'all',
          targets: undoOn,
        });
      }

      // Judged by every node's answer.
      const phaseOne = round.yes.length >= this.quorum;
      if (!phaseOne) reports = heard;
      attempts.push({ attempt, elapsed, nodes: reports });
      if (this.closed) fail(new ClientClosedError(names));
      if (signal?.aborted) fail(new LockAbortedError(names, signal.reason));
      const judged = judgeAttempt(reports, this.quorum, phaseOne);
      const error =
        judged.kind === 'busy'
          ? new ResourceBusyError(names, attempts, judged.split)
          : new QuorumUnreachableError('acquire', names, attempts, this.quorum);
      // Past its own retries, a split vote still gets a few brief jittered ones.
      const extra = attempt > retry.retryCount;
      if (!judged.retryable || (extra && !(judged.split && splitRetries++ < SPLIT_RETRIES))) fail(error);
      const delay = extra ? retryDelayOf(0, SPLIT_JITTER) : retryDelayOf(retry.retryDelay, retry.retryJitter);
      if (performance.now() + delay >= deadline) fail(error);
      if (waiter && !turn) turn = new Turn(this.notifier, waiter, true);
      const stop = this.stopOnClose(signal);
      try {
        await (turn ? turn.wait(delay, stop.signal) : sleep(delay, undefined, { signal: stop.signal }));
      } catch {
        fail(this.closed ? new ClientClosedError(names) : new LockAbortedError(names, signal?.reason));
      } finally {
        stop.dispose();
      }
    }
  }

  /**
   * A waiter that gave up leaves the queues of every node an attempt went to,
   * and wakes the next waiter if it was first. Sent to nodes that look hung too
   * (queued behind their backlog): skipped, a node that was only slow under
   * load would keep the waiter's reservation, and the resource refused, for
   * the whole life of its queue entry.
   */
  private leaveQueue(keys: LockKeys, waiter: string, nodeTimeout: number, queuedOn: readonly boolean[]): void {
    void callRound(LEAVE_QUEUE.call(keys.queues, { waiter, wakePrefix: this.wakePrefix }), releaseVerdict, {
      nodes: this.#nodes,
      quorum: this.quorum,
      timeout: nodeTimeout,
      until: 'all',
      targets: queuedOn,
    });
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
    const lock = await this.acquire(resources, ttl, { ...options, autoExtend: true });
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
    const entry = this.releasable.get(lock);
    if (!entry || !this.held.has(lock)) throw new LockLostError(lock.resources, 'released');
    if (!lock.isHeld) {
      this.lost(lock, 'expired');
      throw new LockLostError(lock.resources, 'expired');
    }
    const t0 = performance.now();
    const round = await callRound(EXTEND.call(entry.keys.locks, { value: secretOf(lock), ttl: newTtl }), heldVerdict, {
      nodes: this.#nodes,
      quorum: this.quorum,
      timeout: this.nodeTimeoutFor(newTtl),
      until: 'quorum',
    });
    const attempt: AttemptReport = { attempt: 1, elapsed: round.elapsed, nodes: round.reports };
    const validity = validityOf(newTtl, round.elapsed, this.options.driftFactor);
    if (!this.held.has(lock)) throw new LockLostError(lock.resources, 'released');
    if (round.yes.length >= this.quorum && validity > 0) {
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
    if (count(round.reports, 'not-held') >= this.quorum) {
      this.lost(lock, 'keys-gone');
      throw new LockLostError(lock.resources, 'keys-gone', attempt);
    }
    throw new QuorumUnreachableError('extend', lock.resources, [attempt], this.quorum);
  }

  /**
   * Deletes the lock's keys on every node (compare-and-delete: never another
   * holder's); resolves once a quorum confirmed. Idempotent. Rejects with
   * `QuorumUnreachableError` when fewer than a quorum of nodes confirmed; the
   * keys then expire at the end of the ttl.
   */
  async release(lock: Lock): Promise<void> {
    const held = this.releasable.get(lock);
    if (!held) return;
    this.releasable.delete(lock);
    // A lost lock is released too: an extension that reached the nodes late may
    // have kept its keys there, and a compare-and-delete is always safe.
    const wasHeld = this.forget(lock);
    const heldFor = Date.now() - lock.acquiredAt;
    lock.markReleased();
    const fair = this.options.fairWaiting ? { wakePrefix: this.wakePrefix, leaving: held.queuedAs } : undefined;
    const round = await callRound(RELEASE.call(held.keys.release, { value: secretOf(lock), fair }), releaseVerdict, {
      nodes: this.#nodes,
      quorum: this.quorum,
      timeout: this.nodeTimeoutFor(lock.ttl),
      // Done for the caller once a quorum deleted: the rest are on their way (one
      // write each, sent at once) and a slow or hung node is not waited for.
      until: 'quorum',
      targets: held.sentTo,
    });
    if (!wasHeld) return; // lost already: reported then, and best effort now
    this.emit({
      type: 'released',
      at: Date.now(),
      lockId: lock.id,
      resources: lock.resources,
      heldFor,
      elapsed: round.elapsed,
      confirmed: round.yes.length,
    });
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
    if (!this.forget(lock)) return;
    this.releasable.delete(lock);
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
   * What the nodes know of `resource`: whether a quorum holds it, on which
   * nodes, for how long, by which holder (a fingerprint, and the identity it
   * recorded with the `identity` option), its fencing counter and waiters.
   * Read-only; never shows a lock value.
   */
  async inspect(resource: string): Promise<ResourceInspection> {
    const [name] = validateResources(resource);
    const keys = [this.layout.lock(name!), this.layout.fence(name!), this.layout.queue(name!)];
    const replies = new Map<string, InspectReply>();
    const record = (reply: InspectReply, node: LockNode): Verdict => {
      replies.set(node.label, reply);
      return { outcome: 'ok' };
    };
    const round = await callRound(INSPECT.call(keys, undefined), record, {
      nodes: this.#nodes,
      quorum: this.quorum,
      timeout: this.options.nodeTimeout ?? defaultNodeTimeout(this.options.ttl),
      until: 'all',
    });
    return inspectionOf(name!, this.quorum, round.reports, replies);
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
    if (this.closed) return this.closed;
    const grace = options.grace === undefined ? this.options.shutdownGrace : checkDelay(options.grace, 'grace', 0);
    this.closed = this.shutDown(grace);
    for (const stop of [...this.waits]) stop();
    return this.closed;
  }

  private async shutDown(grace: number): Promise<void> {
    await Promise.allSettled([...this.inFlight]);
    await this.drain(performance.now() + grace);
    const left = [...this.held];
    for (const lock of left) this.lost(lock, 'shutdown');
    await Promise.all(left.map((lock) => this.release(lock).catch(() => undefined)));
    this.notifier.close();
    for (const detach of this.detach) detach();
    await Promise.all(this.#nodes.map((node) => node.close(CLOSE_TIMEOUT)));
  }

  /**
   * Waits until no lock is kept by running work (auto-extended: `using`,
   * `@Locked`, `autoExtend`) or `until`. Other held locks are not waited for:
   * no call of this client knows when their holder is done.
   */
  private async drain(until: number): Promise<void> {
    for (;;) {
      for (const lock of this.held) if (lock.overdue) this.forget(lock);
      const now = performance.now();
      const running = [...this.held].filter((lock) => lock.autoExtends);
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
    for (const lock of this.held) if (lock.overdue) this.forget(lock);
    this.sweepAt = Math.max(SWEEP_MIN, 2 * this.held.size);
  }

  /** Drops a lock from the held set; false when it was not there. */
  private forget(lock: Lock): boolean {
    if (!this.held.delete(lock)) return false;
    this.emptied?.();
    return true;
  }

  /** Resolves when `promise` settles, `ms` pass, `signal` aborts or the client closes; never rejects. */
  private async settles(promise: Promise<unknown>, ms: number, signal: AbortSignal | undefined): Promise<void> {
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
  private stopOnClose(signal: AbortSignal | undefined): { signal: AbortSignal; dispose: () => void } {
    const controller = new AbortController();
    const abort = () => controller.abort(signal?.reason);
    if (this.closed || signal?.aborted) abort();
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

  /** @internal LockOwner: a lock found lost. */
  lost(lock: Lock, reason: LostReason): void {
    if (!lock.markLost(reason)) return;
    this.forget(lock);
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

  /**
   * Fencing phase 2. The token is the highest counter among the yes votes.
   * Nodes that returned it already store it; if they are a quorum, nothing is
   * sent (the usual case). Otherwise the token is written back, conditionally
   * on still holding the lock, to the other nodes until a quorum stores it.
   *
   * Why tokens grow: two successful acquisitions A and B each end with a
   * quorum of nodes storing their token, and two quorums share a node n. SET NX
   * makes their key lifetimes on n disjoint; say A's came first. A's counter on
   * n reached t(A) while A's key was there (the write-back is conditional on
   * it), so before B's acquire script ran on n, and that script raises the
   * counter: t(B) >= t(A) + 1. No assumption on clocks, pauses or delays.
   * Assumed: counters never go back (every acquisition raises them to at least
   * the acquiring client's clock in microseconds, the same value on every node,
   * which is also where a missing one is reborn; a majority
   * restarted without data inside the ttl, or a client clock behind the one
   * that issued the previous tokens, breaks it), scripts run once per value
   * (they are idempotent), and the node set does not change while locks are held.
   */
  private async confirmToken(
    round: RoundResult,
    value: string,
    /** The lock keys, then their fence counters. */
    scriptKeys: readonly string[],
    nodeTimeout: number,
  ): Promise<{ ok: boolean; token: number; reports: readonly NodeReport[] }> {
    let token = 0;
    for (const vote of round.yes) if (vote.value > token) token = vote.value;
    const agreeing = new Set(round.yes.filter((v) => v.value === token).map((v) => v.index));
    if (agreeing.size >= this.quorum) return { ok: true, token, reports: round.reports };
    const others = this.#nodes.filter((_, i) => !agreeing.has(i));
    const call = CONFIRM_TOKEN.call(scriptKeys, { value, token, locks: scriptKeys.length / 2, retention: this.options.fencingRetention });
    const confirm = await callRound(call, heldVerdict, {
      nodes: others,
      quorum: this.quorum - agreeing.size,
      timeout: nodeTimeout,
      until: 'quorum',
    });
    const byLabel = new Map(confirm.reports.map((r) => [r.node, r]));
    const reports = this.#nodes.map((node, i) =>
      agreeing.has(i) ? round.reports[i]! : byLabel.get(node.label)!,
    );
    return { ok: agreeing.size + confirm.yes.length >= this.quorum, token, reports };
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

  private assertOpen(): void {
    if (this.closed) throw new InvalidArgumentError('this', 'an open Redlock client (close() was called)', 'closed');
  }
}

function buildNodes(specs: readonly NodeSpec[]): readonly LockNode[] {
  if (!Array.isArray(specs) || specs.length === 0) {
    throw new InvalidArgumentError('nodes', 'a non-empty array of ioredis clients, URLs or options', specs);
  }
  const nodes: LockNode[] = [];
  const seen = new Map<string, number>();
  try {
    specs.forEach((spec, i) => {
      if (spec === null || (typeof spec !== 'string' && typeof spec !== 'object')) {
        throw new InvalidArgumentError(`nodes[${i}]`, 'an ioredis client, a URL or an options object', spec);
      }
      // An unset environment variable split on commas gives '': it must not become localhost:6379.
      if (typeof spec === 'string' && !NODE_URL.test(spec)) {
        throw new InvalidArgumentError(`nodes[${i}]`, "a redis:// or rediss:// URL (or a unix socket path starting with '/')", withoutCredentials(spec));
      }
      let node: LockNode;
      try {
        node = LockNode.from(spec);
      } catch (error) {
        throw new InvalidArgumentError(`nodes[${i}]`, `a node ioredis accepts (${error instanceof Error ? error.message : String(error)})`, typeof spec === 'string' ? withoutCredentials(spec) : spec);
      }
      nodes.push(node);
      const first = seen.get(node.identity);
      if (first !== undefined) {
        throw new InvalidArgumentError(
          `nodes[${i}]`,
          `a server different from nodes[${first}] (nodes must fail independently)`,
          node.label,
        );
      }
      seen.set(node.identity, i);
    });
  } catch (error) {
    for (const node of nodes) void node.close(0);
    throw error;
  }
  return nodes;
}

/** What a node given as a string must look like. */
const NODE_URL = /^(rediss?:\/\/[^\s]+|\/[^\s]*)$/i;

/** A node URL as an error may show it: any user and password replaced. */
function withoutCredentials(url: string): string {
  return url.replace(/^([a-z]+:\/\/)[^@/]*@/i, '$1***@');
}

function count(reports: readonly NodeReport[], outcome: NodeReport['outcome']): number {
  let n = 0;
  for (const r of reports) if (r.outcome === outcome) n++;
  return n;
}
