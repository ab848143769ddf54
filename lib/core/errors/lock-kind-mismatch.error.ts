import { formatResources } from '../log-safe.js';
import { LockError } from './lock.error.js';

/**
 * The resource is in use as another kind of lock: a mutex asked for where it
 * is used as a semaphore or read-write lock, a semaphore with another limit,
 * or the reverse. Two kinds on one resource would not exclude each other, so
 * the acquire is refused instead (nothing of it is left on the nodes).
 */
export class LockKindMismatchError extends LockError {
  readonly code = 'LOCK_KIND_MISMATCH' as const;

  constructor(
    readonly resources: readonly string[],
    /** What this call asked for: 'mutex', 'semaphore (limit n)' or 'read-write lock'. */
    readonly requested: string,
    /** What the nodes hold the resource as, as far as they said. */
    readonly found: string,
  ) {
    super(`Resource ${formatResources(resources)} is in use as a ${found}; this call asked for a ${requested}`);
  }
}
