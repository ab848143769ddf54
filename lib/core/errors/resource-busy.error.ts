import type { AttemptReport } from '../outcome.js';
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
        `(${attempts.length} attempt${attempts.length === 1 ? '' : 's'}; last: ${summarize(attempts.at(-1))})`,
    );
  }
}

export function formatResources(resources: readonly string[]): string {
  const shown = resources.slice(0, 3).map((r) => JSON.stringify(r.length > 80 ? `${r.slice(0, 80)}…` : r));
  return resources.length > 3 ? `[${shown.join(', ')}, … ${resources.length - 3} more]` : shown.join(', ');
}

export function summarize(attempt: AttemptReport | undefined): string {
  if (!attempt) return 'none';
  const counts = new Map<string, number>();
  for (const node of attempt.nodes) counts.set(node.outcome, (counts.get(node.outcome) ?? 0) + 1);
  const summary = [...counts].map(([outcome, n]) => `${n} ${outcome}`).join(', ');
  // The first node error says why (refused connection, wrong password, ...); Redis
  // error messages carry no credentials.
  const error = attempt.nodes.find((node) => node.error)?.error;
  return error ? `${summary}; first error: ${error}` : summary;
}
