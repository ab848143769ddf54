import { LockError } from './lock.error.js';

/**
 * A fenced store refused an access: a holder with a higher fencing token has
 * used this key since, so this holder's lock must have run out.
 */
export class StaleTokenError extends LockError {
  readonly code = 'STALE_TOKEN' as const;

  constructor(
    readonly key: string,
    readonly token: number,
    /** The highest token the store has seen for the key. */
    readonly highest: number,
  ) {
    super(`Fencing token ${token} for ${JSON.stringify(key)} is older than ${highest}: access refused`);
  }
}
