import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Cluster, Redis } from 'ioredis';
import { setTimeout as sleep } from 'node:timers/promises';
import { InvalidArgumentError, Redlock, ResourceBusyError } from '../../lib/index.js';
import { ACQUIRE } from '../../lib/core/scripts.js';
import { RedisClusterFleet } from '../support/redis-cluster.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';
import { until } from '../support/until.js';
import { expectShardInEvictionWarning } from '../support/eviction.js';
import { TEST_NODE_TIMEOUT } from '../support/timeouts.js';

// Three lock nodes: a 3-shard Redis Cluster and two standalone servers.
let cluster: RedisClusterFleet;
let standalone: RedisFleet;
let clusterClient: Cluster;
const nodes = () => [clusterClient, ...standalone.urls];

beforeAll(async () => {
  [cluster, standalone] = await Promise.all([RedisClusterFleet.start(3), startFleet(2)]);
  clusterClient = new Cluster(cluster.seeds);
});

afterAll(async () => {
  await clusterClient?.quit().catch(() => undefined);
  await Promise.all([cluster?.stop(), standalone?.stop()]);
});

/** Runs `f` on a connection of its own to one shard's server. */
async function withShard<T>(port: number, f: (r: Redis) => Promise<T>): Promise<T> {
  const r = new Redis(port);
  try {
    return await f(r);
  } finally {
    r.disconnect();
  }
}

describe('a Redis Cluster as a lock node', () => {
  it('excludes concurrent holders and grows fencing tokens, with keys spread over shards', async () => {
    // The default node timeout (50 ms for these 2 s locks): on a loaded machine the Cluster shards'
    // first NOSCRIPT came later than that, and a late NOSCRIPT gets no EVAL (see sendScript), so
    // no shard ever ran a script and held a fencing counter.
    const redlock = new Redlock({ nodes: nodes(), retryCount: 1000, retryDelay: 2, nodeTimeout: TEST_NODE_TIMEOUT });
    try {
      let inside = 0;
      let max = 0;
      let count = 0;
      const tokens: number[] = [];
      await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          redlock.using(`job:${i % 4}`, 2000, async (lock) => {
            if (i % 4 === 0) tokens.push(lock.fencingToken!);
            inside += i % 4 === 0 ? 1 : 0;
            max = Math.max(max, inside);
            const read = count;
            await sleep(1);
            if (i % 4 === 0) count = read + 1;
            inside -= i % 4 === 0 ? 1 : 0;
          }),
        ),
      );
      expect(max).toBe(1);
      expect(count).toBe(5);
      expect([...tokens].sort((a, b) => a - b)).toEqual(tokens);
      // The job:* keys land on more than one shard, each lock's keys on one slot (perhaps after the
      // sections ended: an acquire returns on a majority).
      const shardsWithFences = async () => {
        const counts = await Promise.all(
          cluster.nodes.map(async (n) => {
            const r = new Redis(n.port);
            const fence = await r.keys('redlock:fence:*');
            r.disconnect();
            return fence.length;
          }),
        );
        return counts.filter((k) => k > 0).length;
      };
      await until(async () => (await shardsWithFences()) > 1, 'fencing counters on several shards');
    } finally {
      await redlock.close();
    }
  });

  it('loads its scripts on every master when it starts, not at the first NOSCRIPT of each shard', async () => {
    await Promise.all(cluster.nodes.map((n) => withShard(n.port, (r) => r.script('FLUSH'))));
    const redlock = new Redlock({ nodes: nodes(), nodeTimeout: TEST_NODE_TIMEOUT });
    try {
      await redlock.ready();
      // A shard's first NOSCRIPT answered after the node timeout (a loaded host) gets no EVAL.
      const loaded = await Promise.all(cluster.nodes.map((n) => withShard(n.port, (r) => r.script('EXISTS', ACQUIRE.sha))));
      expect(loaded).toEqual(cluster.nodes.map(() => [1]));
    } finally {
      await redlock.close();
    }
  });

  it('lists locks held across the shards (SCAN on every master) and force-releases one', async () => {
    const redlock = new Redlock({ nodes: nodes(), retryCount: 0, nodeTimeout: TEST_NODE_TIMEOUT });
    try {
      const held = await Promise.all(['list:a', 'list:b', '{list}:c', 'list:d'].map((r) => redlock.acquire(r, 10_000)));
      await until(async () => (await redlock.list('*list*')).locks.every((l) => l.heldOn === 3), 'every lock on every node');
      const listing = await redlock.list('*list*');
      expect(listing.locks.map((l) => l.resource)).toEqual(['list:a', 'list:b', 'list:d', '{list}:c']);
      expect(listing.truncated).toBe(false);
      expect(await redlock.forceRelease('list:b')).toMatchObject({ releasedOn: 3 });
      expect((await redlock.list('list:*')).locks.map((l) => l.resource)).toEqual(['list:a', 'list:d']);
      await Promise.all(held.map((l) => l.release()));
    } finally {
      await redlock.close();
    }
  });

  it('takes multi-resource locks whose names share a hash tag, all or none, and refuses others', async () => {
    const redlock = new Redlock({ nodes: nodes(), retryCount: 0, nodeTimeout: TEST_NODE_TIMEOUT });
    try {
      const order = await redlock.acquire(['{order:42}:payment', '{order:42}:stock'], 5000);
      await expect(redlock.acquire(['{order:42}:stock', '{order:42}:invoice'], 5000)).rejects.toBeInstanceOf(ResourceBusyError);
      const invoice = await redlock.acquire('{order:42}:invoice', 5000); // nothing partial was left
      await Promise.all([order.release(), invoice.release()]);
      const refused = await redlock.acquire(['a', 'b'], 5000).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(InvalidArgumentError);
      expect(String(refused)).toContain('sharing one hash tag');
    } finally {
      await redlock.close();
    }
  });

  it('warns when a shard may evict lock keys, naming the shard (each master has its own policy)', async () => {
    await expectShardInEvictionWarning(
      cluster.nodes[1]!,
      (onEvent) => new Redlock({ nodes: nodes(), nodeTimeout: TEST_NODE_TIMEOUT, onEvent }),
    );
  });

  it('warns of an evicting shard while another master hangs, without waiting for it', async () => {
    await expectShardInEvictionWarning(
      cluster.nodes[1]!,
      (onEvent) => new Redlock({ nodes: nodes(), nodeTimeout: TEST_NODE_TIMEOUT, onEvent }),
      cluster.nodes[2]!,
    );
  });

  it('wakes a waiter through the cluster pub/sub and reports the node by its seeds', async () => {
    const holder = new Redlock({ nodes: nodes() });
    const waiter = new Redlock({ nodes: nodes(), retryDelay: 5000, retryJitter: 0 });
    try {
      expect(holder.nodeLabels[0]).toMatch(/^cluster\(/);
      const held = await holder.acquire('woken', 10_000);
      const waiting = waiter.acquire('woken', 10_000);
      await until(async () => (await holder.inspect('woken')).waiters > 0, 'the waiter in the queue');
      const released = performance.now();
      await held.release();
      await (await waiting).release();
      expect(performance.now() - released).toBeLessThan(1000);
      expect((await holder.inspect('woken')).held).toBe(false);
    } finally {
      await Promise.all([holder.close(), waiter.close()]);
    }
  });
});
