import type { AttemptReport } from '../outcome.js';
import { LockError } from './lock.error.js';
import { formatResources, summarize } from './resource-busy.error.js';

/**
 * Too few nodes answered in time for a quorum (nodes down, hung, slow, or the
 * round took longer than the lock's validity). Says nothing about whether the
 * resource is held: see `attempts[i].nodes` for what each node did.
 */
export class QuorumUnreachableError extends LockError {
  readonly code = 'QUORUM_UNREACHABLE' as const;

  constructor(
    readonly operation: 'acquire' | 'extend' | 'release',
    readonly resources: readonly string[],
    readonly attempts: readonly AttemptReport[],
    readonly quorum: number,
  ) {
    super(
      `Could not ${operation} ${formatResources(resources)}: a quorum of ${quorum} node(s) ` +
        `did not answer in time (${summarize(attempts.at(-1))})`,
    );
  }
}
