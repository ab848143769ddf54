import type { ScanStep } from './connection.js';
import type { LockNode } from './node.js';

/** Keys asked for per SCAN call: a hint to the server, which visits about this many per call. */
const SCAN_COUNT = 1000;

/** What a listing may cost one node: at most `limit` keys collected, at most `calls` SCAN calls. */
export interface ScanBounds {
  /** A Redis glob (see `KeyLayout.lockPattern`). */
  readonly match: string;
  readonly limit: number;
  readonly calls: number;
}

export interface ScanResult {
  readonly keys: readonly string[];
  /** False when a bound stopped the scan before its cursor came back to 0. */
  readonly complete: boolean;
}

/**
 * Walks one node's keyspace with SCAN (never KEYS, which blocks the server for
 * the whole keyspace): a cluster node's masters one after the other, within
 * `bounds` for the node as a whole.
 */
export async function scanNode(node: LockNode, bounds: ScanBounds): Promise<ScanResult> {
  const keys = new Set<string>();
  const budget = { calls: bounds.calls };
  try {
    const steps = node.connection.scanners();
    // A Cluster client that lost every server knows no primary: scanning none, it would pass for a node scanned, with no lock.
    if (steps.length === 0) throw new Error('no primary known to scan');
    for (const step of steps) {
      if (!(await scanServer(step, bounds, keys, budget))) return { keys: [...keys], complete: false };
    }
  } catch (error) {
    throw error instanceof Error ? node.explain(error) : error;
  }
  return { keys: [...keys], complete: true };
}

async function scanServer(step: ScanStep, bounds: ScanBounds, keys: Set<string>, budget: { calls: number }): Promise<boolean> {
  let cursor = '0';
  do {
    if (keys.size >= bounds.limit || budget.calls <= 0) return false;
    budget.calls--;
    const [next, found] = await step(cursor, bounds.match, SCAN_COUNT);
    for (const key of found) keys.add(key);
    cursor = next;
  } while (cursor !== '0');
  return true;
}
