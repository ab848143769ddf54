import type { LockNode } from './node.js';
import { broadcast } from './round.js';

/** One node's answer to a health ping. */
export interface NodeHealth {
  /** `host:port/db` of the node; never credentials. */
  readonly node: string;
  /** `up`: it answered PING in time and its votes count; `down` otherwise. */
  readonly status: 'up' | 'down';
  /** Milliseconds until its answer (or its error); how long it was waited for when silent. */
  readonly latencyMs: number;
  /** Why it is down. */
  readonly error?: string;
  /** It answered, but restarted inside the restart-guard window: its votes are not counted yet. */
  readonly excluded?: true;
}

const roundMs = (ms: number) => Math.round(ms * 10) / 10;

const ping = (node: LockNode): Promise<string> =>
  node.connection.ping().catch((error: Error) => {
    throw node.explain(error);
  });

/**
 * Sends PING to every node at once and waits at most `timeout` ms (one timer
 * for the whole round): a hung node is reported down, never waited for. A
 * node still making its first connection is waited for within the same bound,
 * like a lock operation would. Never rejects.
 */
export async function pingNodes(nodes: readonly LockNode[], timeout: number): Promise<NodeHealth[]> {
  const round = await broadcast({
    nodes,
    send: (node, done) =>
      void node
        .connect()
        // Counted down (its connection failed since it was last ready): said at once, with why, as a
        // lock command is refused; a PING would wait in a reconnecting client's queue past the timeout.
        .then((ready) =>
          ready || node.connection.isReady
            ? ping(node)
            : Promise.reject(node.explain(new Error(`not connected (${node.connection.state})`))),
        )
        .then(
          (reply) => done(undefined, reply),
          (error: unknown) => done(error ?? new Error('PING failed')),
        ),
    classify: (reply, node) => ({ outcome: reply !== 'PONG' ? 'error' : node.excluded ? 'excluded' : 'ok' }),
    quorum: nodes.length,
    timeout,
    until: 'all',
  });
  return round.reports.map((report): NodeHealth => {
    const latencyMs = roundMs(report.ms ?? round.elapsed);
    switch (report.outcome) {
      case 'ok':
        return { node: report.node, status: 'up', latencyMs };
      case 'excluded':
        return {
          node: report.node,
          status: 'down',
          latencyMs,
          excluded: true,
          error: 'restarted inside the restart-guard window: its votes are not counted yet',
        };
      case 'error':
        return { node: report.node, status: 'down', latencyMs, error: report.error ?? 'unexpected reply to PING' };
      default:
        return { node: report.node, status: 'down', latencyMs, error: `no answer within ${timeout} ms` };
    }
  });
}
