import { formatResources } from '../log-safe.js';
import { describeAttempt, type AttemptReport } from '../outcome.js';
import { LockError } from './lock.error.js';

/**
 * Too few nodes answered in time for a quorum (nodes down, hung, slow, or the
 * round took longer than the lock's validity). Says nothing about whether the
 * resource is held: see `attempts[i].nodes` for what each node did.
 */
export class QuorumUnreachableError extends LockError {
  readonly code = 'QUORUM_UNREACHABLE' as const;

  constructor(
    readonly operation: 'acquire' | 'extend' | 'release' | 'inspect' | 'list' | 'force-release',
    readonly resources: readonly string[],
    readonly attempts: readonly AttemptReport[],
    readonly quorum: number,
    /** What was done all the same, said after the rest (a force-release's evictions on the nodes that answered). */
    detail?: string,
  ) {
    super(
      `Could not ${operation} ${formatResources(resources)}: ${failureOf(attempts.at(-1), quorum)} (${describeAttempt(attempts.at(-1))})${detail ? `; ${detail}` : ''}`,
    );
  }
}

/**
 * Words the failure by what the nodes did: refused connections and error
 * replies (out of memory, no permission) are not "no answer in time".
 */
function failureOf(attempt: AttemptReport | undefined, quorum: number): string {
  const outcomes = new Set(attempt?.nodes.map((node) => node.outcome));
  const errors = outcomes.has('error');
  const late = outcomes.has('timeout') || outcomes.has('pending');
  const what =
    errors && !late
      ? 'failed with errors or could not be reached'
      : errors
        ? 'failed or did not answer in time'
        : late
          ? 'did not answer in time'
          : 'were left out';
  const guarded = outcomes.has('excluded') ? ' (nodes that restarted recently are left out by the restart guard)' : '';
  return `too many nodes ${what} for a quorum of ${quorum}${guarded}`;
}
