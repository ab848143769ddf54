import type { LockEvent } from './events.js';
import type { LockNode } from './node.js';

/** How a client watches its nodes: what its restart guard is, and where events go. */
export interface NodeWatch {
  /** The `restartGuard` option: 0 (off), 'auto', or a window in ms. */
  readonly restartGuard: number | 'auto';
  /** The 'auto' guard's window: as long as the longest lock this client took or extended may have lived. */
  readonly autoWindow: () => number;
  readonly emit: (event: LockEvent) => void;
}

/**
 * Reports each node's errors, hangs and restarts as events, and arms the
 * restart guard. Returns the functions that take the listeners off again.
 */
export function watchNodes(nodes: readonly LockNode[], watch: NodeWatch): (() => void)[] {
  const detach: (() => void)[] = [];
  const { restartGuard: guard, emit } = watch;
  for (const node of nodes) {
    // A node that stays down fails every reconnect (200 ms apart) with the same error: each
    // message is reported once a minute at most (a cluster's shards alternate theirs, and a
    // cluster client says nothing when a shard is back), and again at once after the node was
    // ready: not 18,000 log lines an hour.
    const reported = new Map<string, number>();
    const report = (error: Error) => {
      const now = performance.now();
      if (now - (reported.get(error.message) ?? -Infinity) < REPEAT_ERROR_AFTER) return;
      // Messages that vary (a port, a time) would pile up while the node stays down: the old ones go.
      for (const [message, at] of reported) if (now - at >= REPEAT_ERROR_AFTER) reported.delete(message);
      reported.set(error.message, now);
      emit({ type: 'node-error', at: Date.now(), node: node.label, message: error.message });
    };
    detach.push(node.connection.on('error', report));
    detach.push(node.connection.on('ready', () => reported.clear()));
    node.watchHung((silentFor) => emit({ type: 'node-hung', at: Date.now(), node: node.label, silentFor: Math.round(silentFor) }));
    detach.push(node.watchEviction((risky, message) => emit({ type: 'node-error', at: Date.now(), node: risky.label, message })));
    // A cluster's INFO server would come from any one of its shards: the guard covers standalone nodes.
    if (node.connection.isCluster || guard === 0) continue;
    detach.push(
      node.guardRestarts({
        window: guard === 'auto' ? watch.autoWindow : () => guard,
        atFirstContact: guard !== 'auto',
        failOpen: guard === 'auto',
        onRestart: (restarted, excludedFor) => emit({ type: 'node-restarted', at: Date.now(), node: restarted.label, excludedFor }),
        onUnguardable: (unguarded, message) => emit({ type: 'node-error', at: Date.now(), node: unguarded.label, message }),
      }),
    );
  }
  return detach;
}

/** Ms before a node's same error is reported again while it stays down. */
const REPEAT_ERROR_AFTER = 60_000;

/**
 * Longest wait of a call for connections still being made, ms. Past it the
 * call goes on, and nodes still connecting count as not answering: a node
 * that accepts TCP but never answers (hung) must not hold a call up.
 */
export const CONNECT_WAIT = 2000;

/**
 * Calls `done` once a quorum of nodes is connected, or every node has
 * connected or failed once (`done` may be called again after).
 */
export function connectQuorum(nodes: readonly LockNode[], quorum: number, done: () => void): void {
  let up = 0;
  let settled = 0;
  const count = (ok: boolean) => {
    settled++;
    if (ok) up++;
    if (up >= quorum || settled === nodes.length) done();
  };
  for (const node of nodes) node.connect().then(count, () => count(false));
}
