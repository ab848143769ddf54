import { AsyncLocalStorage } from 'node:async_hooks';
import type { Lock } from '../core/lock.js';

/** The locks held by the current call chain, innermost last. */
export interface LockScope {
  readonly locks: readonly Lock[];
  /** The handler an interceptor already locked for; its method wrapper passes through once. */
  intercepted?: Function;
}

export const lockScope = new AsyncLocalStorage<LockScope>();

/** True when every resource is already held by a lock of this call chain (re-entrant call). */
export function heldInScope(resources: readonly string[]): boolean {
  const scope = lockScope.getStore();
  if (!scope) return false;
  return resources.every((r) => scope.locks.some((lock) => lock.isHeld && lock.resources.includes(r)));
}

export function withLock<T>(lock: Lock, fn: () => T, intercepted?: Function): T {
  const outer = lockScope.getStore()?.locks ?? [];
  return lockScope.run({ locks: [...outer, lock], intercepted }, fn);
}
