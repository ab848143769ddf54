import { AsyncLocalStorage } from 'node:async_hooks';
import { LockKindMismatchError, type AcquireOptions, type Lock } from '../core/index.js';
import { describeKind } from '../core/layers.js';
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
 * The lock of this call chain that already holds every resource (a re-entrant
 * call), innermost first; when they are spread over several locks, the
 * innermost of those. `undefined` when some resource is not held here.
 * Throws `LockKindMismatchError` when a lock that holds one of them is not what
 * the call asks for (`asked`): running under it would break the exclusion the
 * call relies on (a write inside a read lock would run beside other readers, a
 * mutex inside a semaphore's permit beside the other holders). A write lock
 * serves a read; a read lock is not upgraded (waiting for the write lock would
 * wait for this very chain's read lock).
 */
export function heldInScope(resources: readonly string[], locks = heldLocks(), asked: AskedKind = {}): Lock | undefined {
  const held = locks.filter((lock) => lock.isHeld);
  const covering = held.findLast((lock) => resources.every((r) => lock.resources.includes(r)));
  if (covering) return checkedKind(covering, resources, asked);
  const owners = resources.map((r) => held.findLast((lock) => lock.resources.includes(r)));
  if (owners.some((lock) => !lock)) return undefined;
  for (const owner of owners) checkedKind(owner!, resources, asked);
  return held.findLast((lock) => owners.includes(lock));
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
  return lockScope.run({ locks: [...outer, lock] }, fn);
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
