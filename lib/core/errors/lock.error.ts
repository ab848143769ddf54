/** Machine-readable codes carried by every error this library throws. */
export type LockErrorCode =
  | 'INVALID_ARGUMENT'
  | 'RESOURCE_BUSY'
  | 'QUORUM_UNREACHABLE'
  | 'LOCK_LOST'
  | 'ABORTED'
  | 'CLIENT_CLOSED'
  | 'STALE_TOKEN'
  | 'LOCK_KIND_MISMATCH'
  | 'NOT_LOCKED';

/**
 * Base class of every error thrown by the lock client. Switch on `code`, not on
 * the message: messages are for people and may change.
 */
export abstract class LockError extends Error {
  abstract readonly code: LockErrorCode;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}
