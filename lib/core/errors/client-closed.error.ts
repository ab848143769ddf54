import { formatResources } from '../log-safe.js';
import { LockError } from './lock.error.js';

/**
 * The client was closed while this call was in flight, or before it: nothing
 * it set is left on the nodes, and no lock was handed out.
 */
export class ClientClosedError extends LockError {
  readonly code = 'CLIENT_CLOSED' as const;

  constructor(readonly resources: readonly string[]) {
    super(`Could not acquire ${formatResources(resources)}: the lock client was closed`);
  }
}
