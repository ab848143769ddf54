import { LockError } from '../core/index.js';

/**
 * `assertLocked()` was called outside any lock of the current call chain (or
 * outside one on the resource it named): the code that must only run under a
 * lock was reached without one.
 */
export class NotLockedError extends LockError {
  readonly code = 'NOT_LOCKED' as const;

  constructor(
    /** The resource asked for, if one was named. */
    readonly resource?: string,
  ) {
    super(
      resource === undefined
        ? 'This code must run under a lock (@Locked, LockService.using), and the current call chain holds none'
        : `This code must run under a lock on ${JSON.stringify(resource.slice(0, 200))}, and the current call chain holds none`,
    );
  }
}
