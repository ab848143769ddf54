import { permitQuorumOf, quorumOf } from '../core/quorum.js';
import type { Redlock } from '../core/redlock.js';

/**
 * What to warn of for a semaphore limit that no node may miss (`who`: the
 * `@Locked` method, or `LockService`).
 *
 * A permit of limit n needs more votes than a lock (see `permitQuorumOf`): from
 * a limit of N - 1 on N nodes, every node's. Such a semaphore then stops, every
 * call refused, when one node restarts or is out, where a lock on the same
 * nodes keeps going: a surprise in production, since a Redlock deployment is
 * usually sized for the lock's tolerance. The README says so; an application's
 * boot log is where its developers will see it (`@Locked` methods, named at
 * startup; `LockService` calls, at the first call with such a limit). Nothing
 * for one or two nodes, where a lock needs every node too.
 */
export function semaphoreQuorumWarning(who: string, limit: number | undefined, client: Redlock): string | undefined {
  // Not a valid limit: the client refuses the call with its own error.
  if (!Number.isInteger(limit) || limit! < 1) return undefined;
  // Read with care: a test may have replaced the client with a mock or a stub (overrideProvider(Redlock)).
  const labels: unknown = (client as Partial<Redlock> | undefined)?.nodeLabels;
  const nodes = Array.isArray(labels) ? labels.length : 0;
  if (nodes < 3 || permitQuorumOf(nodes, limit!) < nodes) return undefined;
  return (
    `${who}: a semaphore of limit ${limit} on ${nodes} nodes needs every node's vote (a lock needs ` +
    `${quorumOf(nodes)}), so with one node down or restarting it grants no permit. On ${nodes} nodes a limit of ` +
    `${nodes - 2} or less tolerates one node down; more nodes allow higher limits (README: "Semaphores and read-write locks").`
  );
}
