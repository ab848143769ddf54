import { AsyncLocalStorage } from 'node:async_hooks';
import type { Lock } from '../core/lock.js';

/** The locks held by the current call chain, innermost last. */
export interface LockScope {
  readonly locks: readonly Lock[];
  /** The handler an interceptor already locked for; its method wrapper passes through once. */
  intercepted?: Function;
}

export const lockScope = new AsyncLocalStorage<LockScope>();

/**
 * The lock of this call chain that already holds every resource (a re-entrant
 * call), innermost first; when they are spread over several locks, the
 * innermost of those. `undefined` when some resource is not held here.
 */
export function heldInScope(resources: readonly string[]): Lock | undefined {
  const held = (lockScope.getStore()?.locks ?? []).filter((lock) => lock.isHeld);
  const covering = held.findLast((lock) => resources.every((r) => lock.resources.includes(r)));
  if (covering) return covering;
  const owners = resources.map((r) => held.findLast((lock) => lock.resources.includes(r)));
  if (owners.some((lock) => !lock)) return undefined;
  return held.findLast((lock) => owners.includes(lock));
}

export function withLock<T>(lock: Lock, fn: () => T, intercepted?: Function): T {
  const outer = lockScope.getStore()?.locks ?? [];
  return lockScope.run({ locks: [...outer, lock], intercepted }, fn);
}
