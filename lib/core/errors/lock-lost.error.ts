import { formatResources } from '../log-safe.js';
import type { AttemptReport } from '../outcome.js';
import { LockError } from './lock.error.js';

/**
 * Why a held lock was found lost: its validity ran out, a majority no longer
 * has its keys, or its client was closed while the lock was still held after
 * the shutdown grace period.
 */
export type LostReason = 'expired' | 'keys-gone' | 'shutdown';

/**
 * The lock is no longer held: its validity ran out, or a majority of nodes no
 * longer has this holder's keys. It is never silently re-acquired.
 */
export class LockLostError extends LockError {
  readonly code = 'LOCK_LOST' as const;

  constructor(
    readonly resources: readonly string[],
    readonly reason: LostReason | 'released',
    readonly attempt?: AttemptReport,
  ) {
    super(`Lock on ${formatResources(resources)} is lost (${reason})`);
  }
}
