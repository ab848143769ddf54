import type { Cluster } from 'ioredis';
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

/** The part of an ioredis client (or of the testing module's in-memory node) that SCAN needs. */
interface Scanner {
  scan(cursor: string, ...args: (string | number)[]): Promise<[cursor: string, keys: string[]]>;
}

/**
 * Walks one node's keyspace with SCAN (never KEYS, which blocks the server for
 * the whole keyspace): a cluster node's masters one after the other, within
 * `bounds` for the node as a whole.
 */
export async function scanNode(node: LockNode, bounds: ScanBounds): Promise<ScanResult> {
  const clients: unknown[] = node.kind === 'cluster' ? (node.client as Cluster).nodes('master') : [node.client];
  const keys = new Set<string>();
  const budget = { calls: bounds.calls };
  let complete = true;
  for (const client of clients) {
    if (typeof (client as Partial<Scanner>).scan !== 'function') throw new Error(`the client of ${node.label} cannot SCAN`);
    complete = (await scanClient(client as Scanner, bounds, keys, budget)) && complete;
    if (!complete) break;
  }
  return { keys: [...keys], complete };
}

async function scanClient(client: Scanner, bounds: ScanBounds, keys: Set<string>, budget: { calls: number }): Promise<boolean> {
  let cursor = '0';
  do {
    if (keys.size >= bounds.limit || budget.calls <= 0) return false;
    budget.calls--;
    const [next, found] = await client.scan(cursor, 'MATCH', bounds.match, 'COUNT', SCAN_COUNT);
    for (const key of found) keys.add(key);
    cursor = String(next);
  } while (cursor !== '0');
  return true;
}
