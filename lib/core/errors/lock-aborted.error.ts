import { formatResources } from '../log-safe.js';
import { LockError } from './lock.error.js';

/** The caller's `AbortSignal` fired while acquiring; nothing is left on the nodes. */
export class LockAbortedError extends LockError {
  readonly code = 'ABORTED' as const;

  constructor(
    readonly resources: readonly string[],
    reason: unknown,
  ) {
    super(`Acquiring ${formatResources(resources)} was aborted`, { cause: reason });
  }
}
