/**
 * What one node did in one round. `ok` is a yes vote; `busy` means another
 * holder's key is there; `not-held` means this holder's key is not there (extend,
 * release); `error` and `timeout` mean no answer that counts; `pending` means the
 * round was decided (quorum reached or impossible) before this node answered;
 * `excluded` means the node said yes but restarted inside the restart-guard
 * window, so its vote is not counted.
 */
export type NodeOutcome = 'ok' | 'busy' | 'not-held' | 'error' | 'timeout' | 'pending' | 'excluded';

export interface NodeReport {
  /** `host:port/db` of the node; never credentials. */
  readonly node: string;
  readonly outcome: NodeOutcome;
  /** Milliseconds from sending to this node's answer; absent when it had not answered. */
  readonly ms?: number;
  /** The node's error message, for `error`. */
  readonly error?: string;
}

export interface AttemptReport {
  /** 1 for the first attempt. */
  readonly attempt: number;
  /** Milliseconds the round took until it was decided. */
  readonly elapsed: number;
  readonly nodes: readonly NodeReport[];
}

/** One attempt in a line: how many nodes did what, and the first node error (recorded without credentials or command arguments: see round.ts). */
export function describeAttempt(attempt: AttemptReport | undefined): string {
  if (!attempt) return 'none';
  const counts = new Map<string, number>();
  for (const node of attempt.nodes) counts.set(node.outcome, (counts.get(node.outcome) ?? 0) + 1);
  const summary = [...counts].map(([outcome, n]) => `${n} ${outcome}`).join(', ');
  // The first node error says why (refused connection, wrong password, ...).
  const error = attempt.nodes.find((node) => node.error)?.error;
  return error ? `${summary}; first error: ${error}` : summary;
}
