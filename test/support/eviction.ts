import { expect } from '@jest/globals';
import type { LockEvent, NodeErrorEvent, Redlock } from '../../lib/index.js';
import { checkedCommand } from './resp.js';
import { until } from './until.js';

/** The node-errors that warn of a node that may evict lock keys. */
export const evictionWarnings = (events: readonly LockEvent[]): NodeErrorEvent[] =>
  events.filter((e): e is NodeErrorEvent => e.type === 'node-error' && /evict/.test(e.message));

/**
 * Sets the server on `port` up as several managed services ship (a 64 MB limit
 * with volatile-lru); returns what puts it back (no limit, noeviction).
 */
async function evictingServer(port: number): Promise<() => Promise<void>> {
  await checkedCommand(port, ['CONFIG', 'SET', 'maxmemory', '67108864']);
  await checkedCommand(port, ['CONFIG', 'SET', 'maxmemory-policy', 'volatile-lru']);
  return async () => {
    await checkedCommand(port, ['CONFIG', 'SET', 'maxmemory', '0']);
    await checkedCommand(port, ['CONFIG', 'SET', 'maxmemory-policy', 'noeviction']);
  };
}

/** A server the test can hang (SIGSTOP) and let go again. */
interface Pausable {
  pause(): Promise<void>;
  resume(): Promise<void>;
}

/**
 * Makes the cluster master `shard` evicting, then a lock client (`make`, given
 * its event listener) whose first node is that cluster: its one eviction
 * warning is for that node and names the shard, within `within` ms. With
 * `hung`, another master hangs (SIGSTOP) while the client starts: the warning
 * must not wait for it. Puts the shards back and closes the client.
 */
export async function expectShardInEvictionWarning(
  shard: { readonly host: string; readonly port: number },
  make: (onEvent: (event: LockEvent) => void) => Redlock,
  hung?: Pausable,
  within = 5000,
): Promise<void> {
  const restore = await evictingServer(shard.port);
  await hung?.pause();
  const events: LockEvent[] = [];
  const redlock = make((event) => events.push(event));
  try {
    await until(() => evictionWarnings(events).length > 0, 'the eviction warning', within);
    const [warning, ...more] = evictionWarnings(events);
    expect(more).toEqual([]);
    expect(warning!.node).toBe(redlock.nodeLabels[0]);
    expect(warning!.message).toContain(`(${shard.host}:${shard.port}: maxmemory-policy volatile-lru, maxmemory 67108864 bytes)`);
  } finally {
    await hung?.resume();
    await restore();
    await redlock.close();
  }
}
