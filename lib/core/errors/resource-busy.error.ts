import { formatResources } from '../log-safe.js';
import { describeAttempt, type AttemptReport } from '../outcome.js';
import { LockError } from './lock.error.js';

/**
 * Another holder has the resource: enough nodes answered, and the ones that
 * refused did so because the key is held by someone else. Never thrown when the
 * failure came from unreachable nodes (see {@link QuorumUnreachableError}).
 */
export class ResourceBusyError extends LockError {
  readonly code = 'RESOURCE_BUSY' as const;

  constructor(
    readonly resources: readonly string[],
    /** Every attempt made, the last one last. */
    readonly attempts: readonly AttemptReport[],
    /**
     * The last attempt was a split vote: fewer than a quorum of nodes refused,
     * so no one held a quorum among the nodes that answered (contenders each
     * took a minority). Retried briefly before this error; busy all the same.
     */
    readonly splitVote = false,
  ) {
    super(
      `Resource ${formatResources(resources)} ${splitVote ? 'is contended (split vote: no holder had a quorum of the nodes that answered)' : 'is held by another holder'} ` +
        `(${attempts.length} attempt${attempts.length === 1 ? '' : 's'}; last: ${describeAttempt(attempts.at(-1))})`,
    );
  }
}
