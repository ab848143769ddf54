import { attemptAcquire, type AttemptOutcome } from './acquire-attempt.js';
import type { AcquirePlan } from './acquire-plan.js';
import type { Closing } from './closing.js';
import { ClientClosedError } from './errors/client-closed.error.js';
import { LockAbortedError } from './errors/lock-aborted.error.js';
import type { LockError } from './errors/lock.error.js';
import { QuorumUnreachableError } from './errors/quorum-unreachable.error.js';
import { ResourceBusyError } from './errors/resource-busy.error.js';
import type { LockEvent } from './events.js';
import type { HeldLocks } from './held-locks.js';
import { judgeAttempt, nextStep, SPLIT_JITTER } from './judgement.js';
import { Lock, type LockOwner } from './lock.js';
import type { ResolvedOptions } from './options.js';
import { describeAttempt, type AttemptReport, type NodeReport } from './outcome.js';
import { retryDelayOf, validityOf } from './quorum.js';
import { callRound, type NodeSet } from './round.js';
import { describeKind, mismatchIn, optionsOfPermit } from './permit.js';
import { LockKindMismatchError } from './errors/lock-kind-mismatch.error.js';
import { CONNECT_WAIT } from './node-watch.js';
import { Turn, type AwaitedHandOver } from './turn.js';
import { LEAVE_QUEUE } from './scripts.js';
import { doneVerdict, heldVerdict } from './verdicts.js';
import type { WakeNotifier } from './wake-notifier.js';
import { packedFill, packedMap } from './packed.js';

/**
 * Longest wait for the rest of a quorum of hand-overs once one came, ms (or
 * the node timeout, if shorter). A release reaches every node at about the
 * same time, so the others' messages follow within moments; a node that did
 * not hand over (for a permit: one where the waiter does not fit yet) sends
 * nothing. Past this, the next attempt finds the lock or permit where it was
 * handed over and takes the rest: a short wait costs at most an attempt, a
 * long one (the node timeout is 100 ms for a 10 s ttl) was each such
 * waiter's whole wait in the semaphore benchmark.
 */
const HANDOVER_GRACE = 10;

/**
 * A semaphore's waiter whose quorum of hand-overs came at different tokens waits
 * this long, ms (or the grace, if shorter), for the rest of the nodes' (see
 * Turn.handedOver): with every node's, it takes its permit without a write-back
 * round. In the semaphore benchmark (16 processes, limit 4, 5 nodes) the last came
 * 0.05 ms after the quorum at the median, 0.45 ms at the 90th percentile, and 8% not
 * within 10 ms: a node that handed its slot to another waiter sends nothing.
 */
const HANDOVERS_REST = 1;

/** What the loop uses of its client. */
export interface AcquireHost {
  readonly set: NodeSet;
  /** The client, which the locks report to. */
  readonly owner: LockOwner;
  readonly options: ResolvedOptions;
  readonly notifier: WakeNotifier;
  readonly closing: Closing;
  readonly locks: HeldLocks;
  readonly wakePrefix: string;
  /** The first connections, while fewer than a quorum of nodes are up (and checked) and some are still being made. */
  readonly connecting: () => Promise<void> | undefined;
  readonly emit: (event: LockEvent) => void;
  /** Someone listens to lock events: the hot path builds none for nobody. */
  readonly listening: () => boolean;
}

/** The retry loop of `acquire`, apart from the attempt (node-redlock's `_execute` beside `_attemptOperation`). */
export class AcquireLoop {
  // The host reaches the nodes' clients: truly private.
  readonly #host: AcquireHost;

  constructor(host: AcquireHost) {
    this.#host = host;
  }

  /** Calls now waiting for a busy resource (refused at least once, not given up yet): a gauge for operators. */
  waiting = 0;

  /**
   * HANDOVER_GRACE, for this client. Not an option: the hand-over tests raise
   * it, so that on a loaded machine a node's message read late does not turn
   * the hand-over they check into the attempt that follows one missed.
   */
  handOverGrace = HANDOVER_GRACE;

  /** HANDOVERS_REST, for this client, raised by the same tests for the same reason. */
  handOverRest = HANDOVERS_REST;

  /** Runs the plan: attempts (see `attemptAcquire`), judged, until one takes the lock or the call gives up. */
  async run(plan: AcquirePlan): Promise<Lock> {
    const waits = { counted: false };
    try {
      return await this.attempts(plan, waits);
    } finally {
      if (waits.counted) this.waiting--;
    }
  }

  private async attempts(plan: AcquirePlan, waits: { counted: boolean }): Promise<Lock> {
    const { notifier, closing } = this.#host;
    const set = this.#host.set;
    const attempts: AttemptReport[] = [];
    /** The nodes any attempt went to: where a waiter may be queued. */
    const queuedOn: boolean[] = packedFill(set.nodes.length, false);
    // This client's wake channel already subscribed (it waited before): watch from
    // the first attempt, so a release during it is not missed.
    let turn = plan.waiter && notifier.isSubscribed ? new Turn(notifier, plan.waiter, false) : undefined;
    const fail = (error: LockError) => this.gaveUp(plan, error, attempts.length, turn, queuedOn);
    const connecting = this.#host.connecting();
    if (connecting) await closing.settles(connecting, Math.min(CONNECT_WAIT, plan.deadline - performance.now()), plan.signal);
    for (let attempt = 1; ; attempt++) {
      const stopped = this.stoppedFor(plan);
      if (stopped) throw fail(stopped);
      const began = performance.now();
      const outcome = await attemptAcquire(
        set,
        plan,
        this.#host.options.driftFactor,
        () => !plan.signal?.aborted && !closing.isClosed,
        attempt,
      );
      outcome.sent.forEach((sent, i) => sent && (queuedOn[i] = true));
      attempts.push({ attempt, elapsed: outcome.elapsed, nodes: outcome.reports });
      if (outcome.taken) {
        turn?.stop();
        return this.handOver(plan, outcome, attempt, queuedOn, false);
      }
      const stoppedNow = this.stoppedFor(plan);
      if (stoppedNow) throw fail(stoppedNow);
      const mismatch = kindMismatch(plan, outcome.reports);
      if (mismatch) throw fail(mismatch);
      // A semaphore's slot refused where another is free: that one is tried at once.
      if (this.moveSlot(plan, set, outcome.sent)) continue;
      const judged = judgeAttempt(outcome.reports, set.quorum, outcome.reachedQuorum);
      // Built only to be thrown: an error's stack trace costs more than the rest of a refused attempt's bookkeeping.
      const error = () =>
        judged.kind === 'busy'
          ? new ResourceBusyError(plan.names, attempts, judged.split)
          : new QuorumUnreachableError('acquire', plan.names, attempts, set.quorum);
      const step = nextStep(judged, attempt - (plan.slots?.moved ?? 0), plan.retry.retryCount);
      if (step === 'give-up') throw fail(error());
      const { retryDelay, retryJitter } = plan.retry;
      const delay = step === 'split-retry' ? retryDelayOf(0, SPLIT_JITTER) : retryDelayOf(retryDelay, retryJitter);
      // Next attempt past the deadline: a waiter waits for a hand-over till then, a poller gives up.
      const left = plan.deadline - performance.now();
      if (delay >= left && !plan.waiter) throw fail(error());
      if (plan.waiter && !turn) turn = new Turn(notifier, plan.waiter, true);
      if (!waits.counted) {
        waits.counted = true;
        this.waiting++;
      }
      const awaited = turn && this.awaiting(plan, set, attempt, outcome.reports);
      const interrupted = await this.waitTurn(plan, turn, Math.min(delay, Math.max(0, left)), awaited);
      if (interrupted) throw fail(interrupted);
      const handed = awaited && (await this.handedOver(plan, set, turn!, awaited, began, queuedOn, outcome.reports));
      if (handed) {
        turn!.stop();
        return this.handOver(plan, handed, attempt, queuedOn, true);
      }
      if (performance.now() >= plan.deadline) throw fail(error()); // a wait cut short leaves time for one
      // Woken to take a semaphore's slot freed with nobody queued for it: the next attempt goes there.
      if (plan.slots && turn) this.moveSlot(plan, set, queuedOn, turn.takeFree());
    }
  }

  /** What a waiter watches for in its wait: a quorum of hand-overs of this attempt's entry from the nodes that refused it. */
  private awaiting(plan: AcquirePlan, set: NodeSet, attempt: number, reports: readonly NodeReport[]): AwaitedHandOver {
    return {
      attempt,
      eligible: this.eligible(set, reports),
      quorum: set.quorum,
      anyToken: plan.slots !== undefined,
      grace: Math.min(plan.nodeTimeout, this.handOverGrace),
      rest: Math.min(plan.nodeTimeout, this.handOverGrace, this.handOverRest),
    };
  }

  /** Per node: it refused the attempt (so got no undo from it) and is counted (not inside its restart guard). */
  private eligible(set: NodeSet, reports: readonly NodeReport[]): boolean[] {
    return packedMap(set.nodes, (node, i) => reports[i]?.outcome === 'busy' && !node.excluded);
  }

  /**
   * The lock, when releases handed it over to this waiter on a quorum of the
   * nodes that refused its last attempt (see `Turn.handedOver`). Each such key
   * was set after that attempt began (its refusal wrote the entry the release
   * read), with the lock's ttl: the validity is counted from `began`, as if
   * the attempt had taken it.
   */
  private async handedOver(
    plan: AcquirePlan,
    set: NodeSet,
    turn: Turn,
    awaited: AwaitedHandOver,
    began: number,
    queuedOn: readonly boolean[],
    reports: readonly NodeReport[],
  ): Promise<(AttemptOutcome & { taken: true }) | undefined> {
    const handed = turn.handedOver({
      attempt: awaited.attempt,
      eligible: this.eligible(set, reports),
      quorum: awaited.quorum,
      anyToken: awaited.anyToken,
    });
    if (!handed || this.stoppedFor(plan)) return undefined;
    if (handed.storing < set.quorum && plan.retention > 0) {
      // A semaphore's hand-overs with different tokens from fewer than every node (see
      // Turn.handedOver): the highest is written back where the permit was handed over
      // with a lower one, until a quorum stores it (fencing's phase 2, see confirmToken
      // in acquire-attempt.ts).
      const lower = packedMap(set.nodes, (_, i) => handed.by[i] === true && turn.tokenFrom(i) !== handed.token);
      // The nodes not sent to count as yes in a round: the quorum counts them too.
      const needed = set.quorum - handed.storing + countFalse(lower);
      const confirm = await callRound(plan.confirm(handed.token), heldVerdict, {
        nodes: set.nodes,
        quorum: needed,
        timeout: plan.nodeTimeout,
        until: 'quorum',
        targets: lower,
      });
      if (confirm.yes.length < needed) return undefined;
    }
    const elapsed = performance.now() - began;
    const validity = validityOf(plan.ttl, elapsed, this.#host.options.driftFactor);
    if (validity <= 0) return undefined;
    // The nodes that count say yes (a permit's holder leaves the queues of the others, see
    // handOver); the release goes wherever an attempt went: the waiter leaves those queues in it.
    const votes = packedMap(reports, (report, i) => (handed.by[i] ? { node: report.node, outcome: 'ok' as const, ms: report.ms } : report));
    return {
      taken: true,
      elapsed,
      reports: votes,
      validity,
      expiresAt: began + elapsed + validity,
      token: handed.token,
      refused: true,
      unconfirmed: HANDED_OVER,
      sent: queuedOn,
    };
  }

  /**
   * A semaphore's permit moves to a free slot a quorum of nodes named, in their refusals
   * or (`woken`) the wake-ups of their releases (see SlotChoice): it leaves
   * the queue of the slot it leaves, where its attempts went. True when it moved.
   */
  private moveSlot(plan: AcquirePlan, set: NodeSet, sent: readonly boolean[], woken?: readonly number[]): boolean {
    if (woken) plan.slots?.offer(woken);
    const left = plan.slots?.move(set.quorum);
    if (!left) return false;
    if (plan.waiter) {
      const call = LEAVE_QUEUE.call(left, { waiter: plan.waiter, wakePrefix: this.#host.wakePrefix });
      void callRound(call, doneVerdict, { nodes: set.nodes, quorum: set.quorum, timeout: plan.nodeTimeout, until: 'all', targets: sent });
    }
    return true;
  }

  /** Why the call must stop now, if it must: the client closed, or the caller aborted. */
  private stoppedFor(plan: AcquirePlan): LockError | undefined {
    if (this.#host.closing.isClosed) return new ClientClosedError(plan.names);
    if (plan.signal?.aborted) return new LockAbortedError(plan.names, plan.signal.reason);
    return undefined;
  }

  /** Waits for the retry delay, or less on a wake-up; returns the error when the client closed or the call was aborted meanwhile. */
  private async waitTurn(
    plan: AcquirePlan,
    turn: Turn | undefined,
    delay: number,
    awaited: AwaitedHandOver | undefined,
  ): Promise<LockError | undefined> {
    const { closing } = this.#host;
    const stopped = await (turn
      ? turn.wait(delay, (stop) => closing.onStop(plan.signal, stop), awaited)
      : closing.pause(delay, plan.signal));
    if (!stopped) return undefined;
    return closing.isClosed ? new ClientClosedError(plan.names) : new LockAbortedError(plan.names, plan.signal?.reason);
  }

  /** The attempt took the lock: it is held, and handed to the caller. */
  private handOver(
    plan: AcquirePlan,
    outcome: AttemptOutcome & { taken: true },
    attempt: number,
    queuedOn: readonly boolean[],
    handedOver: boolean,
  ): Lock {
    const { owner, options, locks, emit, listening } = this.#host;
    const lock = new Lock(owner, {
      id: plan.id,
      resources: plan.names,
      value: plan.value,
      ttl: plan.ttl,
      expiresAt: outcome.expiresAt,
      fencingToken: plan.retention > 0 ? outcome.token : undefined,
      attempts: attempt,
      threshold: options.threshold,
      maxExtensions: options.maxExtensions,
      ...(plan.slots ? { limit: plan.slots.limit } : optionsOfPermit(plan.permit)),
    });
    // A waiter stays in the queues while it holds the lock (the key keeps the
    // others out anyway) and leaves them in its release: no round of its own.
    // Only an attempt some node refused can have queued it: an earlier one, or
    // this one on a node that refused it after the round was decided (asked at
    // the release: left there, its fresh entry would be handed the freed key by
    // its own release, a key nobody holds for a ttl).
    const waiter = plan.waiter;
    if (plan.permit) {
      // Where a node refused it, a permit holder is a waiter still, counted against
      // the limit twice: it leaves those queues now. Where a node admitted it, it
      // kept its place marked as a holder's (any attempt queues it there), and
      // leaves in its release.
      if (waiter && (attempt > 1 || outcome.refused))
        this.leaveQueue(
          plan,
          packedMap(queuedOn, (q, i) => q && outcome.reports[i]?.outcome !== 'ok'),
        );
      locks.add(lock, { keys: plan.keys, sentTo: outcome.sent, queuedAs: waiter, permit: plan.permit.calls });
    } else {
      const queued = attempt > 1 || outcome.refused;
      const { slots } = plan;
      locks.add(lock, {
        keys: slots?.keys ?? plan.keys,
        sentTo: outcome.sent,
        queuedAs: waiter,
        unconfirmed: queued || !waiter ? undefined : outcome.unconfirmed,
        slot: slots && { mark: slots.mark, limit: slots.limit, index: slots.slot },
      });
    }
    if (plan.autoExtend) lock.startAutoExtend();
    if (!listening()) return lock;
    emit({
      type: 'acquired',
      at: Date.now(),
      lockId: lock.id,
      resources: plan.names,
      ttl: plan.ttl,
      validity: Math.floor(outcome.validity),
      attempts: attempt,
      elapsed: performance.now() - plan.started,
      fencingToken: lock.fencingToken,
      handedOver,
    });
    return lock;
  }

  /** The call gives up with `error` (returned, to be thrown): it stops watching for its turn, leaves the queues, and says so. */
  private gaveUp(plan: AcquirePlan, error: LockError, attempts: number, turn: Turn | undefined, queuedOn: readonly boolean[]): LockError {
    turn?.stop();
    // Any attempt a node refused queued this waiter there, turn or not.
    if (plan.waiter && attempts > 0) this.leaveQueue(plan, queuedOn);
    const { names: resources, started } = plan;
    this.#host.emit(
      error.code === 'RESOURCE_BUSY'
        ? { type: 'busy', at: Date.now(), resources, attempts, elapsed: performance.now() - started }
        : {
            type: 'acquire-failed',
            at: Date.now(),
            resources,
            code: error.code,
            attempts,
            elapsed: performance.now() - started,
            ...(error instanceof QuorumUnreachableError ? { reason: describeAttempt(error.attempts.at(-1)) } : {}),
          },
    );
    return error;
  }

  /**
   * A waiter that gave up leaves the queues of every node an attempt went to,
   * and wakes the next waiter if it was first. Sent to nodes that look hung too
   * (queued behind their backlog): skipped, a node that was only slow under
   * load would keep the waiter's reservation, and the resource refused, for
   * the whole life of its queue entry.
   */
  private leaveQueue(plan: AcquirePlan, queuedOn: readonly boolean[]): void {
    // A permit handed over on every node it queued on (the usual hand-over) is queued nowhere
    // else: a round to no node would only build the script's arguments, the round and its promise.
    if (!queuedOn.includes(true)) return;
    const { nodes, quorum } = this.#host.set;
    void callRound(plan.leave(), doneVerdict, { nodes, quorum, timeout: plan.nodeTimeout, until: 'all', targets: queuedOn });
  }
}

/** How many entries are false: a round's nodes that are not targets, which it counts as yes. */
function countFalse(flags: readonly boolean[]): number {
  let n = 0;
  for (const flag of flags) if (!flag) n++;
  return n;
}

/** A lock handed over was queued by an attempt before (its release leaves the queues whatever this says). */
const HANDED_OVER = { count: 0 };

/** A node said the resource is held as another kind of lock (see PERMIT_ACQUIRE): the call is refused, typed. */
function kindMismatch(plan: AcquirePlan, reports: readonly NodeReport[]): LockKindMismatchError | undefined {
  for (const report of reports) {
    const asked = plan.permit?.kind ?? (plan.slots && String(plan.slots.limit));
    const found = report.outcome === 'error' ? mismatchIn(report.error, asked) : undefined;
    if (found) return new LockKindMismatchError(plan.names, describeKind(asked), found);
  }
  return undefined;
}
