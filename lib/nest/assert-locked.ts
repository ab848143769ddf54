import type { Lock } from '../core/index.js';
import { heldLocks } from './lock-context.js';
import { NotLockedError } from './not-locked.error.js';

/**
 * Throws unless the code calling it runs under a lock taken by `@Locked` or
 * `LockService.using` in the same call chain (on `resource`, when named), in
 * the spirit of ShedLock's `LockAssert.assertLocked()`: for code that must
 * never run unguarded, such as the body of a job that a refactoring might call
 * from elsewhere. Returns the lock. Throws `NotLockedError` when the chain holds
 * no such lock, and `LockLostError` when it held one that is lost or released.
 *
 * @example
 * async settle(invoiceId: string) {
 *   const lock = assertLocked(`invoice:${invoiceId}`);
 *   await this.store.set(invoiceId, 'settled', lock.fencingToken!);
 * }
 */
export function assertLocked(resource?: string): Lock {
  const locks = heldLocks();
  const lock = resource === undefined ? locks.at(-1) : locks.findLast((l) => l.resources.includes(resource));
  if (!lock) throw new NotLockedError(resource);
  lock.assertHeld();
  return lock;
}
