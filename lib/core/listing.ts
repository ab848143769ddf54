import { InvalidArgumentError } from './errors/invalid-argument.error.js';
import { QuorumUnreachableError } from './errors/quorum-unreachable.error.js';
import { inspectNodes, type ResourceInspection } from './inspection.js';
import type { KeyLayout } from './keys.js';
import { broadcast, type NodeSet } from './round.js';
import { scanNode, type ScanResult } from './scan.js';

/** Options of `Redlock.list`. */
export interface ListOptions {
  /** Most resources listed, 1 to 10 000. Default 100. */
  readonly limit?: number;
}

/** What `Redlock.list` found. */
export interface LockListing {
  /**
   * Resources with a holder on at least one node, by name, each as `inspect` describes it (`held`: on a quorum): mutexes,
   * semaphores and read-write locks alike (`kind`), with every holder.
   */
  readonly locks: readonly ResourceInspection[];
  /** More may match: `limit` was reached, or a node's scan stopped at its bound before the end of its keyspace. */
  readonly truncated: boolean;
  /** Nodes whose keyspace was scanned, and the quorum. Every lock held on a quorum is on one of them. */
  readonly scanned: number;
  readonly quorum: number;
}

export const DEFAULT_LIST_LIMIT = 100;
export const MAX_LIST_LIMIT = 10_000;
/** SCAN calls per node per listing: with COUNT 1000, about 200 000 keys visited at most. */
const SCAN_CALLS = 200;
/** Longest wait for one node's whole scan, ms: a hung node is counted out, never waited for. */
const SCAN_TIMEOUT = 5000;
/** Resources inspected at once. */
const CONCURRENCY = 16;

export function checkListLimit(limit: unknown): number {
  if (limit === undefined) return DEFAULT_LIST_LIMIT;
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT) {
    throw new InvalidArgumentError('limit', `an integer from 1 to ${MAX_LIST_LIMIT}`, limit);
  }
  return limit;
}

export function checkPattern(pattern: unknown): string {
  if (typeof pattern !== 'string' || pattern.length === 0 || pattern.length > 1024) {
    throw new InvalidArgumentError('pattern', 'a Redis glob of 1 to 1024 characters, e.g. "orders:*"', pattern);
  }
  return pattern;
}

/**
 * Lists the locks whose resource matches `pattern`: every node's lock keys are
 * found with SCAN (bounded per node), and each resource found is inspected on
 * every node, so that what is shown is the quorum's view, not one node's.
 * Rejects with `QuorumUnreachableError` when fewer than a quorum of nodes could
 * be scanned: a lock held on a quorum might then go unseen.
 */
export async function listLocks(set: NodeSet, layout: KeyLayout, pattern: string, limit: number, timeout: number): Promise<LockListing> {
  // Every kind by its lock key: a semaphore's holds its marker (its slots' keys are lock#<slot>).
  const bounds = { match: layout.lockPattern(pattern), limit, calls: SCAN_CALLS };
  const scans: ScanResult[] = [];
  const round = await broadcast({
    nodes: set.nodes,
    send: (node, done) => void scanNode(node, bounds).then((result) => done(undefined, result), done),
    classify: (result: unknown) => (scans.push(result as ScanResult), { outcome: 'ok' }),
    quorum: set.quorum,
    timeout: SCAN_TIMEOUT,
    until: 'all',
  });
  if (round.yes.length < set.quorum) {
    throw new QuorumUnreachableError('list', [pattern], [{ attempt: 1, elapsed: round.elapsed, nodes: round.reports }], set.quorum);
  }
  const names = new Set<string>();
  for (const scan of scans) {
    for (const key of scan.keys) {
      const name = layout.resourceOfLockKey(key);
      if (name !== undefined) names.add(name);
    }
  }
  const sorted = [...names].sort();
  const chosen = sorted.slice(0, limit);
  const found = await inspectAll(set, layout, chosen, timeout);
  return {
    // A key that expired between the scan and the inspection is not a lock any more.
    locks: found.filter((lock) => lock.heldOn > 0),
    truncated: sorted.length > limit || scans.some((scan) => !scan.complete),
    scanned: round.yes.length,
    quorum: set.quorum,
  };
}

async function inspectAll(set: NodeSet, layout: KeyLayout, names: readonly string[], timeout: number): Promise<ResourceInspection[]> {
  const found: ResourceInspection[] = new Array(names.length);
  let next = 0;
  const worker = async () => {
    while (next < names.length) {
      const i = next++;
      const name = names[i]!;
      found[i] = await inspectNodes(set, layout, name, timeout);
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, names.length) }, worker));
  return found;
}
