import { AsyncLocalStorage } from 'node:async_hooks';
import { LockKindMismatchError, type AcquireOptions, type Lock } from '../core/index.js';
import { describeKind } from '../core/layers.js';
import { isObservable, Observable } from 'rxjs';
import type { LockKeyContext } from './lock-key.js';

/**
 * What the interceptor knows of a controller call and the method wrapper does
 * not: the request (or message) the handler's key may read, and its kind.
 */
export interface RequestScope {
  /** The `@Locked` metadata of the handler this request is for. */
  readonly metadata: object;
  /** `http`, `rpc`, `ws` (`ExecutionContext.getType()`). */
  readonly type: string;
  /** The request's parts, before pipes (`args` is filled by the wrapper, after pipes). */
  readonly request: Omit<LockKeyContext, 'args' | 'self'>;
}

/** The locks held by the current call chain, innermost last; and the request being handled, if any. */
export interface LockScope {
  readonly locks: readonly Lock[];
  readonly request?: RequestScope;
}

export const lockScope = new AsyncLocalStorage<LockScope>();

/** What a call asks for: a mutex (neither), a semaphore's permit (`limit`) or a read-write lock's (`mode`). */
export type AskedKind = Pick<AcquireOptions, 'limit' | 'mode'>;

/**
 * A re-entrant call's place in its chain: the lock it runs under, and every
 * lock of the chain that holds one of its resources.
 */
export interface Reentry {
  /** The lock the call is given (its `current()`): the innermost that holds every resource, else the innermost owner. */
  readonly lock: Lock;
  /** The locks that hold its resources: each one is kept until the call settled (see `runNested`). */
  readonly owners: readonly Lock[];
}

/**
 * The lock of this call chain that already holds every resource (a re-entrant
 * call), innermost first; when they are spread over several locks, the
 * innermost of those, with them all as the owners. `undefined` when some resource is not held here.
 * Throws `LockKindMismatchError` when a lock that holds one of them is not what
 * the call asks for (`asked`): running under it would break the exclusion the
 * call relies on (a write inside a read lock would run beside other readers, a
 * mutex inside a semaphore's permit beside the other holders). A write lock
 * serves a read; a read lock is not upgraded (waiting for the write lock would
 * wait for this very chain's read lock).
 */
export function heldInScope(resources: readonly string[], locks = heldLocks(), asked: AskedKind = {}): Reentry | undefined {
  const held = locks.filter((lock) => lock.isHeld && !ending.has(lock));
  const covering = held.findLast((lock) => resources.every((r) => lock.resources.includes(r)));
  if (covering) return { lock: checkedKind(covering, resources, asked), owners: [covering] };
  const owners = resources.map((r) => held.findLast((lock) => lock.resources.includes(r)));
  if (owners.some((lock) => !lock)) return undefined;
  for (const owner of owners) checkedKind(owner!, resources, asked);
  // Counted on each: released when only the innermost's holder ended, an outer one would leave a resource unheld under it.
  return { lock: held.findLast((lock) => owners.includes(lock))!, owners: [...new Set(owners as Lock[])] };
}

/** `lock`, if a call asking for `asked` may run under it; else the typed refusal, thrown. */
function checkedKind(lock: Lock, resources: readonly string[], asked: AskedKind): Lock {
  const { limit, mode } = lock;
  if (limit === asked.limit && (mode === asked.mode || (mode === 'write' && asked.mode === 'read'))) return lock;
  const upgrade = mode === 'read' && asked.mode === 'write';
  throw new LockKindMismatchError(
    resources,
    describeAsked(asked),
    `${describeAsked(lock)} held by this call chain${upgrade ? ' (a read lock is not upgraded to a write lock)' : ''}`,
  );
}

/** 'mutex', 'semaphore (limit 3)', 'read lock', 'write lock'. */
function describeAsked({ limit, mode }: AskedKind): string {
  return mode ? `${mode} lock` : describeKind(limit === undefined ? undefined : String(limit));
}

/** The locks of the current call chain. */
export function heldLocks(): readonly Lock[] {
  return lockScope.getStore()?.locks ?? [];
}

/** Runs `fn` with `lock` added to the chain's locks (after `outer`, the chain's locks by default); the request is not passed on. */
export function withLock<T>(lock: Lock, fn: () => T, outer = heldLocks()): T {
  return withLocks([...outer, lock], fn);
}

/** Runs `fn` with `locks` as the chain's locks (a call made in a chain, run later: a stream subscribed elsewhere). */
export function withLocks<T>(locks: readonly Lock[], fn: () => T): T {
  return lockScope.run({ locks }, fn);
}

/**
 * Calls run under a lock their chain took (re-entrant calls) that have not
 * settled, per lock. A call the holder starts and does not wait for (an event
 * handler its `publish()` or `emit()` ran, a saga's command) runs under the
 * holder's lock and may outlive the holder's own call: the lock is kept until
 * they settled (see `endNesting`), or a second caller would run beside them.
 */
const nestedRuns = new WeakMap<Lock, { running: number; settled: Promise<void>; settle: () => void }>();

/**
 * Runs a re-entrant call under its owners (see `heldInScope`), counted on each
 * until its result settles: a promise or thenable (then given back as a
 * promise, so that it runs once), or an Observable (from subscription to its end).
 */
export function runNested({ owners }: Reentry, call: () => unknown): unknown {
  const result = call();
  const enter = () => {
    const leaves = owners.map(enterNested);
    return () => leaves.forEach((leave) => leave());
  };
  if (isObservable(result)) {
    return new Observable<unknown>((subscriber) => {
      const leave = enter();
      const inner = result.subscribe(subscriber);
      return () => {
        inner.unsubscribe();
        leave();
      };
    });
  }
  if (!isThenable(result)) return result;
  const leave = enter();
  const settled = Promise.resolve(result);
  settled.then(leave, leave);
  return settled;
}

function enterNested(lock: Lock): () => void {
  let runs = nestedRuns.get(lock);
  if (!runs) {
    let settle!: () => void;
    const settled = new Promise<void>((resolve) => (settle = resolve));
    runs = { running: 0, settled, settle };
    nestedRuns.set(lock, runs);
  }
  const entered = runs;
  entered.running++;
  let left = false;
  return () => {
    if (left) return;
    left = true;
    if (--entered.running > 0) return;
    nestedRuns.delete(lock);
    entered.settle();
  };
}

/** Locks whose holder's call ended and whose nested calls settled: on their way out (released, or left to expire). */
const ending = new WeakSet<Lock>();

/**
 * Resolves once no re-entrant call runs under `lock` (those running now, and
 * any they start), and marks it ending in the same step: a call that comes
 * after, while the release (or `lockAtLeastFor`'s last extension) is under
 * way, does not run under it, but takes a lock of its own (see `heldInScope`).
 */
export async function endNesting(lock: Lock): Promise<void> {
  for (let runs = nestedRuns.get(lock); runs; runs = nestedRuns.get(lock)) await runs.settled;
  ending.add(lock);
}

/** A promise, or any object with a `then` (a Mongoose query, a Knex builder): what `await` would wait for. */
export function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    (typeof value === 'object' || typeof value === 'function') && value !== null && typeof (value as { then?: unknown }).then === 'function'
  );
}

/** Runs `fn` (the rest of a controller call: pipes, then the handler) with the request in scope. */
export function withRequest<T>(request: RequestScope, fn: () => T): T {
  return lockScope.run({ locks: heldLocks(), request }, fn);
}

/** The request of the call being handled, when it is the request of the handler with this metadata. */
export function requestFor(metadata: object): RequestScope | undefined {
  const request = lockScope.getStore()?.request;
  return request?.metadata === metadata ? request : undefined;
}
