import { InvalidArgumentError } from './errors/invalid-argument.error.js';
import { validateResources, type KeyLayout, type LockKeys } from './keys.js';
import { checkTtl, resolveRetry, type AcquireOptions, type ResolvedOptions } from './options.js';
import { queuePosition } from './queue-position.js';
import type { RandomPool } from './random-pool.js';
import type { SlotMemory } from './slot-memory.js';
import { validityOf } from './quorum.js';
import { permitCalls, permitOf, type PermitCalls, type PermitKind } from './permit.js';
import type { Call } from './script.js';
import { ACQUIRE, CONFIRM_TOKEN, LEAVE_QUEUE, RELEASE, SET_NX, type AcquireArgs, type AcquireReply, type FairWaiting } from './scripts.js';

/** What a client knows that every acquire plan is made from. */
export interface PlanContext {
  readonly options: ResolvedOptions;
  readonly layout: KeyLayout;
  /**
   * Some node is a Redis Cluster. Its client may send a command again on its own
   * (a redirection, a failover), where a bare SET NX would then read its own key
   * as another holder's: with such a node, the client always sends the ACQUIRE
   * script, which knows its own value.
   */
  readonly clustered: boolean;
  /** Names this client in its waiters' ids. */
  readonly clientId: string;
  /** `<prefix>wake:`: a release wakes a waiter on this, followed by its client id. */
  readonly wakePrefix: string;
  /** Appended to every lock value: the holder identity, if recorded. */
  readonly identity: string;
  /** Where lock values come from. */
  readonly random: RandomPool;
  /** The slot of each semaphore's last permit this client released: its next permit's first try. */
  readonly slotMemory: SlotMemory;
  readonly nodeTimeoutFor: (ttl: number, override?: number) => number;
}

/** Everything one `acquire` call decides before its first attempt: computed once, read by every attempt. */
export interface AcquirePlan {
  readonly names: readonly string[];
  readonly ttl: number;
  readonly keys: LockKeys;
  /** The lock's public id. */
  readonly id: string;
  /** The secret value, with the holder identity. */
  readonly value: string;
  /** The id under which this call queues (fair waiting, with retries); '' when it does not. */
  readonly waiter: string;
  readonly nodeTimeout: number;
  readonly retry: ReturnType<typeof resolveRetry>;
  readonly signal: AbortSignal | undefined;
  readonly autoExtend: boolean;
  /** `performance.now()` at the call, and past which no attempt starts. */
  readonly started: number;
  readonly deadline: number;
  /** Counters are kept this long, ms; 0: fencing off. */
  readonly retention: number;
  /** The acquire of attempt `attempt` (made per attempt: the fencing floor is read from the clock). */
  readonly acquire: (attempt: number) => Call<AcquireReply>;
  /** The undo of a failed attempt: a waiter keeps its place, and its undo does not wake it. */
  readonly undo: () => Call<number>;
  /** Fencing phase 2: raise the counters to `token` where the lock is still held. */
  readonly confirm: (token: number) => Call<boolean>;
  /** The waiter leaves the queues (it gave up, or holds a permit while queued elsewhere). */
  readonly leave: () => Call<unknown>;
  /** A read-write lock's permit: its kind and calls; undefined for a mutex or a semaphore. */
  readonly permit: (PermitKind & { readonly calls: PermitCalls }) | undefined;
  /** A semaphore's permit: the slot it tries, and how it moves to a free one; undefined otherwise. */
  readonly slots: SlotChoice | undefined;
}

/**
 * A semaphore's permit is one of its `limit` slots, each a lock of its own (see
 * slot-scripts.ts). A call tries first the slot of its client's last permit of the
 * resource (see SlotMemory), or one drawn at random, so that callers at the same
 * moment rarely want the same one; a node that refuses it names
 * the slots it has free with nobody queued (or, with none free, those whose queue is
 * much shorter for this caller), and the call moves at once to one a majority named
 * (leaving the queue it joined); else it waits in its slot's queue, for that slot's
 * hand-over.
 */
export class SlotChoice {
  /** The slot tried now. */
  slot: number;
  keys: LockKeys;
  /** Slots to move to (free, or with a shorter queue) named by the nodes that refused the current attempt. */
  private readonly named: number[] = [];
  /**
   * Nodes that granted the current attempt's slot (it failed elsewhere): they count for
   * any slot named, as they have room (a caller that reaches only a majority, one of
   * them refusing, would otherwise never see a slot named by a majority).
   */
  private granted = 0;
  private moves = 0;

  /** `first`: the slot to try first (see SlotMemory); else one drawn at random. */
  constructor(
    private readonly layout: KeyLayout,
    private readonly resource: string,
    readonly limit: number,
    first?: number,
  ) {
    this.slot = first ?? (limit > 1 ? Math.floor(Math.random() * limit) : 0);
    this.keys = layout.forSlot(resource, this.slot);
  }

  /** The acquire of the current slot, its replies' named free slots kept. */
  acquire(args: AcquireArgs): Call<AcquireReply> {
    const call = ACQUIRE.call(this.keys.locks, args);
    this.named.length = 0;
    this.granted = 0;
    return {
      command: call.command,
      keys: call.keys,
      argv: call.argv,
      decode: (reply) => {
        const decoded = call.decode(reply);
        if (decoded.free !== undefined) for (const slot of decoded.free) this.named.push(slot);
        if (decoded.taken) this.granted++;
        return decoded;
      },
    };
  }

  /**
   * After a refused attempt: moves to the slot most nodes named, if any (at most
   * `limit` times a call, so that callers racing for the same free slots still end up
   * waiting in line). Returns the queue keys of the slot left, or undefined.
   */
  move(quorum: number): readonly string[] | undefined {
    if (this.named.length === 0 || this.moves >= this.limit) return undefined;
    const counts = new Map<number, number>();
    let best = this.named[0]!;
    for (const slot of this.named) {
      const c = (counts.get(slot) ?? 0) + 1;
      counts.set(slot, c);
      if (c > counts.get(best)!) best = slot;
    }
    // Named by a quorum (with the nodes that had room): free on enough nodes to be taken
    // (under contention, a slot free on a few nodes only is being taken by another).
    if (counts.get(best)! + this.granted < quorum) return undefined;
    const left = this.keys.queues();
    this.moves++;
    this.slot = best;
    this.keys = this.layout.forSlot(this.resource, best);
    return left;
  }

  /** The slots wake-ups named free, one per node: the next `move` goes to the one a quorum named. */
  offer(named: readonly number[]): void {
    this.named.length = 0;
    this.granted = 0;
    for (const slot of named) if (slot >= 0 && slot < this.limit && slot !== this.slot) this.named.push(slot);
  }

  /** Moves so far (not counted as the caller's retries). */
  get moved(): number {
    return this.moves;
  }

  /** The semaphore's marker key (SLOT_EXTEND keeps it alive). */
  get mark(): string {
    return this.layout.slots(this.resource);
  }
}

/** Bytes of randomness in a lock's secret value (160 bits). */
const VALUE_BYTES = 20;

/**
 * One draw for both: the secret value (followed by the holder identity), and
 * the public id (unrelated bytes), which doubles as the waiter id in the nodes' queues.
 */
function drawValue(random: RandomPool, identity: string): { value: string; id: string } {
  return random.take(VALUE_BYTES + 8, (bytes, at) => ({
    value: bytes.toString('base64url', at, at + VALUE_BYTES) + identity,
    id: bytes.toString('hex', at + VALUE_BYTES, at + VALUE_BYTES + 8),
  }));
}

/** Checks the arguments of one `acquire` call and makes its plan. */
export function planAcquire(
  context: PlanContext,
  resources: string | readonly string[],
  ttl: number | undefined,
  options: AcquireOptions,
): AcquirePlan {
  const { options: client, layout, wakePrefix } = context;
  const names = validateResources(resources);
  const permit = permitOf(options);
  if (permit && names.length > 1) {
    throw new InvalidArgumentError('resources', 'a single resource with `limit` or `mode` (a permit is of one resource)', names);
  }
  const lockTtl = checkTtl(ttl ?? client.ttl);
  // Below this the drift allowance alone leaves no validity: no attempt could succeed.
  const allowance = lockTtl - validityOf(lockTtl, 0, client.driftFactor);
  if (lockTtl - allowance < 1) throw new InvalidArgumentError('ttl', `more than ${allowance} ms (the drift allowance)`, lockTtl);
  const retry = resolveRetry(options, client);
  const nodeTimeout = context.nodeTimeoutFor(lockTtl, options.nodeTimeout);
  const started = performance.now();
  const { fencingRetention: retention, fairWaiting: fair } = client;
  const { value, id } = drawValue(context.random, context.identity);
  // A waiter's id names its client, whose channel the release wakes it on.
  // A writer's id ends in ':w': queued, it weighs the whole limit (see permit-scripts.ts).
  const waiter = fair && retry.retryCount > 0 ? `${context.clientId}.${id}${permit?.writer ? ':w' : ''}` : '';
  // A queue entry lives long enough to survive the wait until the next attempt.
  const entryTtl = 2 * (retry.retryDelay + retry.retryJitter + nodeTimeout) + 100;
  const queueing: FairWaiting | undefined = !fair ? undefined : waiter ? { join: { waiter, since: queuePosition(), entryTtl } } : {};
  // The fencing token's floor: this clock in µs, one value for every node (read per attempt).
  const fencing = () => (retention > 0 ? { retention, floor: Date.now() * 1000 } : undefined);
  const base: PlanBase = {
    names,
    ttl: lockTtl,
    id,
    value,
    waiter,
    nodeTimeout,
    retry,
    signal: options.signal,
    autoExtend: options.autoExtend === true,
    started,
    deadline: retry.acquireTimeout === undefined ? Infinity : started + retry.acquireTimeout,
    retention,
  };
  if (permit && permit.kind !== 'rw') return planSlots(context, base, Number(permit.kind), { fair: queueing, fencing });
  if (permit) return planPermit(context, base, permit, { fair: queueing, fencing });
  const keys = layout.forLock(names, retention > 0, fair);
  const { locks } = keys;
  const { prefixLength } = layout;
  // The plain protocol on one resource needs no script: the wire's floor.
  const plain = names.length === 1 && retention === 0 && !fair && !context.clustered;
  return assemble(base, {
    keys,
    acquire: plain
      ? () => SET_NX.call(locks, { value, ttl: lockTtl })
      : (attempt) => ACQUIRE.call(locks, { value, ttl: lockTtl, fair: queueing, prefixLength, fencing: fencing(), attempt }),
    // Made only for an attempt that failed: most never need one.
    undo: () => RELEASE.call(locks, { value, fair: fair ? { prefixLength, undoneBy: waiter } : undefined }),
    confirm: (token) => CONFIRM_TOKEN.call(keys.confirm(), { value, token, locks: locks.length, retention }),
    leave: () => LEAVE_QUEUE.call(keys.queues(), { waiter, wakePrefix }),
    permit: undefined,
    slots: undefined,
  });
}

/** The plan of a semaphore's permit: a lock on one of its slots (see SlotChoice). */
function planSlots(
  context: PlanContext,
  base: PlanBase,
  limit: number,
  per: { fair: FairWaiting | undefined; fencing: () => AcquireArgs['fencing'] },
): AcquirePlan {
  const { value, waiter, ttl, retention } = base;
  const { layout, wakePrefix } = context;
  const { prefixLength } = layout;
  const slots = new SlotChoice(layout, base.names[0]!, limit, context.slotMemory.take(base.names[0]!, limit));
  return assemble(base, {
    keys: slots.keys,
    acquire: (attempt) => slots.acquire({ value, ttl, fair: per.fair, prefixLength, fencing: per.fencing(), attempt, limit }),
    // With the prefix length whether fair waiting is on or not: a slot's release drops the marker with the last permit.
    undo: () => RELEASE.call(slots.keys.locks, { value, fair: { prefixLength, undoneBy: waiter } }),
    confirm: (token) => CONFIRM_TOKEN.call(slots.keys.confirm(), { value, token, locks: 1, retention }),
    leave: () => LEAVE_QUEUE.call(slots.keys.queues(), { waiter, wakePrefix }),
    permit: undefined,
    slots,
  });
}

/** What a plan holds besides its calls. */
type PlanBase = Omit<AcquirePlan, keyof PlanCalls>;
/** A plan's keys and calls: a mutex's, or a permit's. */
type PlanCalls = Pick<AcquirePlan, 'keys' | 'acquire' | 'undo' | 'confirm' | 'leave' | 'permit' | 'slots'>;

/**
 * The plan as one object literal, every field named: `{ ...base, ...calls }`
 * cost about 5 µs per acquire (V8 copies the spread, then adds each property
 * through a new map), as much as the rest of planAcquire together.
 */
function assemble(base: PlanBase, calls: PlanCalls): AcquirePlan {
  return {
    names: base.names,
    ttl: base.ttl,
    id: base.id,
    value: base.value,
    waiter: base.waiter,
    nodeTimeout: base.nodeTimeout,
    retry: base.retry,
    signal: base.signal,
    autoExtend: base.autoExtend,
    started: base.started,
    deadline: base.deadline,
    retention: base.retention,
    keys: calls.keys,
    acquire: calls.acquire,
    undo: calls.undo,
    confirm: calls.confirm,
    leave: calls.leave,
    permit: calls.permit,
    slots: calls.slots,
  };
}

/** The plan of a semaphore's or read-write lock's permit (see permit-scripts.ts). */
function planPermit(
  context: PlanContext,
  base: PlanBase,
  permit: PermitKind,
  per: { fair: FairWaiting | undefined; fencing: () => AcquireArgs['fencing'] },
): AcquirePlan {
  const { retention, waiter, value } = base;
  const { fairWaiting: fair } = context.options;
  const calls = permitCalls(context.layout, base.names[0]!, permit, value, {
    fencing: retention > 0,
    fair,
    wakePrefix: context.wakePrefix,
  });
  const locks = calls.locks;
  return assemble(base, {
    keys: { locks, confirm: () => locks, queues: () => calls.queues },
    acquire: (attempt) => calls.acquire({ ttl: base.ttl, fair: per.fair, fencing: per.fencing(), attempt }),
    // An undone waiter keeps its place on the nodes that admitted it, waiting again there.
    undo: () => calls.release({ member: true, leaving: '', skip: waiter, entryTtl: per.fair?.join?.entryTtl }),
    confirm: (token) => calls.confirm(token, retention),
    // A permit a release handed over to it and it never took up is given back too.
    leave: () => calls.release({ member: true, leaving: waiter, skip: '' }),
    permit: { kind: permit.kind, writer: permit.writer, calls },
    slots: undefined,
  });
}
