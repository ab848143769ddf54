import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { GlideClusterClient, type GlideClient } from '@valkey/valkey-glide';
import { Redis } from 'ioredis';
import { setTimeout as sleep } from 'node:timers/promises';
import { InvalidArgumentError, Redlock, ResourceBusyError } from '../../lib/index.js';
import { RedisClusterFleet } from '../support/redis-cluster.js';
import { GLIDE_REQUEST_TIMEOUT, glideClient, glideClusterClient, watchPipelines } from '../support/glide.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';
import { until } from '../support/until.js';
import { expectShardInEvictionWarning } from '../support/eviction.js';
import { TEST_NODE_TIMEOUT } from '../support/timeouts.js';

// Three lock nodes: a 3-shard Redis Cluster through a GlideClusterClient, and two standalone servers through GlideClients.
let cluster: RedisClusterFleet;
let standalone: RedisFleet;
let clusterClient: GlideClusterClient;
let standaloneClients: GlideClient[];
const nodes = () => [clusterClient, ...standaloneClients];

beforeAll(async () => {
  [cluster, standalone] = await Promise.all([RedisClusterFleet.start(3), startFleet(2)]);
  clusterClient = await glideClusterClient(cluster.seeds);
  standaloneClients = await Promise.all(standalone.ports.map((port) => glideClient(port)));
});

afterAll(async () => {
  clusterClient?.close();
  standaloneClients?.forEach((c) => c.close());
  await Promise.all([cluster?.stop(), standalone?.stop()]);
});

/** How many shards hold keys matching `pattern`. */
async function shardsWith(pattern: string): Promise<number> {
  const counts = await Promise.all(
    cluster.nodes.map(async (n) => {
      const r = new Redis(n.port);
      const keys = await r.keys(pattern);
      r.disconnect();
      return keys.length;
    }),
  );
  return counts.filter((k) => k > 0).length;
}

/** SCRIPT FLUSH on every shard: the next script each runs answers NOSCRIPT. */
async function flushShards(): Promise<void> {
  await Promise.all(
    cluster.nodes.map(async (n) => {
      const r = new Redis(n.port);
      await r.script('FLUSH');
      r.disconnect();
    }),
  );
}

describe('a Redis Cluster through a GlideClusterClient as a lock node', () => {
  it('excludes concurrent holders and grows fencing tokens, with keys spread over shards', async () => {
    // The tests' node timeout, not the default 50 ms: a shard's first NOSCRIPT answered later than
    // that gets no EVAL (see sendScript), and under load a shard could end up with no fencing counter.
    const redlock = new Redlock({ nodes: nodes(), retryCount: 1000, retryDelay: 2, nodeTimeout: TEST_NODE_TIMEOUT });
    try {
      const seeds = cluster.seeds.map((s) => `127.0.0.1:${s.port}`).sort();
      expect(redlock.nodeLabels[0]).toBe(`cluster(${seeds.join(',')})`);
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
      await until(async () => (await shardsWith('redlock:fence:*')) > 1, 'fencing counters on several shards');
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

  it('warns of an evicting shard while another master hangs, after GLIDE gave up on it', async () => {
    // The read of every primary at once fails after GLIDE's request timeout, then each primary is
    // read on its own (the primaries asked of the seeds in turn), the hung one again until that timeout.
    await expectShardInEvictionWarning(
      cluster.nodes[1]!,
      (onEvent) => new Redlock({ nodes: nodes(), nodeTimeout: TEST_NODE_TIMEOUT, onEvent }),
      cluster.nodes[2]!,
      3 * GLIDE_REQUEST_TIMEOUT + 5000,
    );
  });

  it('lists locks held across the shards (SCAN on every primary, addressed by route) and force-releases one', async () => {
    const redlock = new Redlock({ nodes: nodes(), retryCount: 0, nodeTimeout: TEST_NODE_TIMEOUT });
    try {
      const names = Array.from({ length: 12 }, (_, i) => `glide-list:${i}`);
      const held = await Promise.all(names.map((r) => redlock.acquire(r, 10_000)));
      // An acquire returns on a majority: the cluster node's keys may land after it.
      await until(async () => (await redlock.list('glide-list:*')).locks.every((l) => l.heldOn === 3), 'every lock on every node');
      expect(await shardsWith('*lock*glide-list*')).toBeGreaterThan(1);
      const listing = await redlock.list('glide-list:*');
      expect(listing.locks.map((l) => l.resource).sort()).toEqual([...names].sort());
      expect(await redlock.forceRelease('glide-list:3')).toMatchObject({ releasedOn: 3 });
      expect((await redlock.list('glide-list:*')).locks).toHaveLength(11);
      await Promise.all(held.map((l) => l.release().catch(() => undefined)));
    } finally {
      await redlock.close();
    }
  });

  it('takes multi-resource locks whose names share a hash tag, all or none, and refuses others', async () => {
    const redlock = new Redlock({ nodes: nodes(), retryCount: 0, nodeTimeout: TEST_NODE_TIMEOUT });
    try {
      const order = await redlock.acquire(['{order:42}:payment', '{order:42}:stock'], 5000);
      await expect(redlock.acquire(['{order:42}:stock', '{order:42}:invoice'], 5000)).rejects.toBeInstanceOf(ResourceBusyError);
      const invoice = await redlock.acquire('{order:42}:invoice', 5000);
      await Promise.all([order.release(), invoice.release()]);
      await expect(redlock.acquire(['a', 'b'], 5000)).rejects.toBeInstanceOf(InvalidArgumentError);
    } finally {
      await redlock.close();
    }
  });

  it('runs its scripts again on every shard after SCRIPT FLUSH (NOSCRIPT fallback per shard)', async () => {
    const redlock = new Redlock({ nodes: nodes(), retryCount: 0, nodeTimeout: TEST_NODE_TIMEOUT });
    try {
      await redlock.ready();
      await flushShards();
      for (let i = 0; i < 12; i++) await (await redlock.acquire(`flushed:${i}`, 5000)).release();
      // The cluster layout's keys, redlock:fence:{<tag>}:<resource>, on several shards: the cluster node ran them
      // (perhaps after the acquires returned on the standalone majority).
      await until(async () => (await shardsWith('redlock:fence:*flushed:*')) > 1, 'fencing counters on several shards');
    } finally {
      await redlock.close();
    }
  });

  it('pipelines the commands concurrent locks send to the cluster in one tick, each routed to its shard (NOSCRIPT per shard included)', async () => {
    const own = await glideClusterClient(cluster.seeds);
    const sizes: number[] = [];
    watchPipelines([own], sizes);
    const redlock = new Redlock({ nodes: [own, ...standaloneClients], retryCount: 0, nodeTimeout: TEST_NODE_TIMEOUT });
    try {
      await redlock.ready(); // then whether the client's commands are pipelined is settled
      await flushShards();
      const tokens = await Promise.all(
        Array.from({ length: 32 }, (_, i) => redlock.using(`piped:${i}`, 5000, async (lock) => lock.fencingToken)),
      );
      expect(sizes.some((n) => n > 1)).toBe(true);
      expect(tokens.every((t) => typeof t === 'number')).toBe(true); // every lock taken, with a fencing token
      // Run on several shards (each acquire was decided at quorum: the cluster's own replies may come later).
      await until(async () => (await shardsWith('redlock:fence:*piped:*')) > 1, 'fencing counters on several shards');
      await until(async () => (await shardsWith('redlock:lock:*piped:*')) === 0, 'every key released');
    } finally {
      await redlock.close();
      own.close();
    }
  });

  it('wakes a waiter through a cluster subscriber client', async () => {
    const holder = new Redlock({ nodes: nodes() });
    const waiter = new Redlock({ nodes: nodes(), retryDelay: 5000, retryJitter: 0 });
    try {
      const held = await holder.acquire('woken', 10_000);
      const waiting = waiter.acquire('woken', 10_000);
      await until(async () => (await holder.inspect('woken')).waiters > 0, 'the waiter in the queue');
      // The cluster's own subscriber (a GlideClusterClient made from the node client's configuration) is up.
      const subscribedShards = async () => {
        const channels = await Promise.all(
          cluster.nodes.map(async (n) => {
            const r = new Redis(n.port);
            const list = (await r.pubsub('CHANNELS', 'redlock:wake:*')) as string[];
            r.disconnect();
            return list.length;
          }),
        );
        return channels.filter((c) => c > 0).length;
      };
      await until(async () => (await subscribedShards()) > 0, 'a subscriber on the cluster');
      const released = performance.now();
      await held.release();
      await (await waiting).release();
      expect(performance.now() - released).toBeLessThan(1000);
    } finally {
      await Promise.all([holder.close(), waiter.close()]);
    }
  });
});

describe('a GlideClusterClient whose servers are all gone', () => {
  it('is refused by a listing after one request timeout, not one per seed asked in turn', async () => {
    const requestTimeout = 1000;
    const shards = await RedisClusterFleet.start(3);
    const client = await GlideClusterClient.createClient({ addresses: shards.seeds.map((s) => ({ ...s })), requestTimeout });
    // No wake-up subscriber: closed with its servers gone, it waits a request timeout for its UNSUBSCRIBE, past the test's end.
    const redlock = new Redlock({ nodes: [client, ...standaloneClients], fairWaiting: false });
    try {
      await (await redlock.acquire('glide-gone', 10_000, { retryCount: 0 })).release();
      await shards.stop();
      await until(async () => (await redlock.inspect('glide-gone')).nodes[0]!.state === 'error', 'the cluster failing commands');
      const started = performance.now();
      expect((await redlock.list('*')).scanned).toBe(2);
      // Each of the 3 seeds waited for in turn: 3 request timeouts.
      expect(performance.now() - started).toBeLessThan(2.5 * requestTimeout);
    } finally {
      await redlock.close();
      client.close();
      await shards.stop();
    }
  });
});
