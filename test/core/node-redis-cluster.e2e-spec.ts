/**
 * A node-redis cluster (`createCluster` of redis v4, v5, v6) as one lock node
 * beside two standalone servers. One cluster for the whole file.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { setTimeout as sleep } from 'node:timers/promises';
import { InvalidArgumentError, Redlock, type NodeSpec } from '../../lib/index.js';
import { connectionFor } from '../../lib/core/clients/connection-for.js';
import { ACQUIRE } from '../../lib/core/scripts.js';
import { RedisClusterFleet } from '../support/redis-cluster.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';
import { closeClient, connected, destroyClient, NODE_REDIS_VERSIONS, type NodeRedisCluster } from '../support/node-redis-clients.js';
import { until } from '../support/until.js';
import { checkedCommand } from '../support/resp.js';
import { expectShardInEvictionWarning } from '../support/eviction.js';

let cluster: RedisClusterFleet;
let standalone: RedisFleet;

beforeAll(async () => {
  [cluster, standalone] = await Promise.all([RedisClusterFleet.start(3), startFleet(2)]);
});
afterAll(async () => {
  await Promise.all([cluster?.stop(), standalone?.stop()]);
});

/** Connections of every shard's server, counted on the servers. */
async function shardConnections(): Promise<number> {
  const counts = await Promise.all(
    cluster.nodes.map(async (n) => {
      const r = new Redis(n.port);
      const list = (await r.client('LIST')) as string;
      r.disconnect();
      return list.trim().split('\n').length - 1; // not this one
    }),
  );
  return counts.reduce((a, b) => a + b, 0);
}

describe.each(NODE_REDIS_VERSIONS)('a node-redis cluster as a lock node: $name', (version) => {
  let nodeRedis: NodeRedisCluster;
  const clients: Redlock[] = [];
  const redlock = (options: Partial<ConstructorParameters<typeof Redlock>[0]> = {}) => {
    const client = new Redlock({ nodes: [nodeRedis as NodeSpec, ...standalone.urls], ...options });
    clients.push(client);
    return client;
  };

  beforeAll(async () => {
    nodeRedis = await connected(version.cluster(cluster.seeds));
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
  });
  afterAll(async () => {
    await closeClient(nodeRedis);
  });

  it('is known by its root nodes, as an ioredis Cluster of the same seeds is', () => {
    const { connection, owned } = connectionFor(nodeRedis as NodeSpec);
    expect([owned, connection.isCluster]).toEqual([false, true]);
    const seeds = cluster.seeds.map((s) => `127.0.0.1:${s.port}`).sort();
    expect(connection.identity).toBe(`cluster(${seeds.join(',')})`);
    expect(() => new Redlock({ nodes: [nodeRedis as NodeSpec, ...standalone.urls, nodeRedis as NodeSpec] })).toThrow(InvalidArgumentError);
  });

  it('loads its scripts on every master when it starts, not at the first NOSCRIPT of each shard', async () => {
    const onShards = (f: (r: Redis) => Promise<unknown>) =>
      Promise.all(
        cluster.nodes.map(async (n) => {
          const r = new Redis(n.port);
          try {
            return await f(r);
          } finally {
            r.disconnect();
          }
        }),
      );
    await onShards((r) => r.script('FLUSH'));
    await redlock().ready();
    // A shard's first NOSCRIPT answered after the node timeout (a loaded host) gets no EVAL.
    expect(await onShards((r) => r.script('EXISTS', ACQUIRE.sha))).toEqual(cluster.nodes.map(() => [1]));
  });

  it('warns when a shard may evict lock keys, naming the shard (each master has its own policy)', async () => {
    await expectShardInEvictionWarning(cluster.nodes[1]!, (onEvent) => redlock({ onEvent }));
  });

  it('warns of an evicting shard while another master hangs, without waiting for it', async () => {
    await expectShardInEvictionWarning(cluster.nodes[1]!, (onEvent) => redlock({ onEvent }), cluster.nodes[2]!);
  });

  it('lists locks over every master with SCAN, and force-releases one', async () => {
    const client = redlock({ retryCount: 0 });
    const names = ['nr-list:a', 'nr-list:b', 'nr-list:c', 'nr-list:d'];
    const held = await Promise.all(names.map((r) => client.acquire(r, 10_000)));
    await until(async () => (await client.list('nr-list:*')).locks.every((l) => l.heldOn === 3), 'every lock on every node');
    expect((await client.list('nr-list:*')).locks.map((l) => l.resource)).toEqual(names);
    expect(await client.forceRelease('nr-list:c')).toMatchObject({ releasedOn: 3 });
    expect((await client.list('nr-list:*')).locks.map((l) => l.resource)).toEqual(['nr-list:a', 'nr-list:b', 'nr-list:d']);
    await Promise.all(held.map((l) => l.release()));
  });

  it('excludes concurrent holders and grows fencing tokens', async () => {
    const client = redlock({ retryCount: 1000, retryDelay: 2 });
    let inside = 0;
    let max = 0;
    const tokens: number[] = [];
    await Promise.all(
      Array.from({ length: 16 }, (_, i) =>
        client.using(`job:${version.name}:${i % 4}`, 2000, async (lock) => {
          if (i % 4 !== 0) return;
          tokens.push(lock.fencingToken!);
          max = Math.max(max, ++inside);
          await sleep(1);
          inside--;
        }),
      ),
    );
    expect([max, tokens.length]).toEqual([1, 4]);
    expect([...tokens].sort((a, b) => a - b)).toEqual(tokens);
  });

  it('wakes a waiter through the cluster pub/sub, and closes the connections it opened for it', async () => {
    const before = await shardConnections();
    const holder = redlock();
    const waiter = redlock({ retryDelay: 5000, retryJitter: 0 });
    const held = await holder.acquire('woken', 10_000);
    const waiting = waiter.acquire('woken', 10_000);
    await until(async () => (await holder.inspect('woken')).waiters > 0, 'the waiter in the queue');
    const released = performance.now();
    await held.release();
    await (await waiting).release();
    expect(performance.now() - released).toBeLessThan(1000);
    await Promise.all(clients.splice(0).map((c) => c.close()));
    // At most: a connection counted in `before` (an earlier count's own, say) may have closed since.
    await until(async () => (await shardConnections()) <= before, 'the wake-up connections closed');
  });
});

describe.each(NODE_REDIS_VERSIONS)('a node-redis cluster that lost every server: $name', (version) => {
  it('fails a call at once while its shards reconnect, instead of queueing it until its timeout', async () => {
    const shards = await RedisClusterFleet.start(3);
    const nodeRedis = await connected(version.cluster(shards.seeds));
    const locks = new Redlock({ nodes: [nodeRedis as NodeSpec, ...standalone.urls] });
    try {
      await (await locks.acquire('nr-gone', 10_000, { retryCount: 0 })).release();
      expect((await locks.inspect('nr-gone')).nodes.map((node) => node.state)).toEqual(['free', 'free', 'free']);
      // Its wake-up connection made first: v4 keeps one it is still making open for ever, its cluster closed or not.
      await until(
        async () =>
          (await Promise.all(shards.nodes.map((n) => checkedCommand(n.port, ['PUBSUB', 'CHANNELS', 'redlock:wake:*'])))).flat().length > 0,
        'the wake-up channel subscribed',
      );
      await shards.stop();
      await until(
        () => nodeRedis.masters.every((master) => (master as { client?: { isReady?: boolean } }).client?.isReady === false),
        "every shard's connection lost",
      );
      expect((await locks.inspect('nr-gone')).nodes.map((node) => node.state)).toEqual(['error', 'free', 'free']);
      const started = performance.now();
      expect((await locks.list('*')).scanned).toBe(2);
      // The listing waited 5 s for the cluster.
      expect(performance.now() - started).toBeLessThan(1500);
    } finally {
      await locks.close();
      await destroyClient(nodeRedis);
      await shards.stop();
    }
  });
});

// Not v4: its cluster makes the connection it subscribes on inside SUBSCRIBE, and one still being
// made when the cluster is closed is left reconnecting for ever (see README).
const CLOSABLE_MID_SUBSCRIBE = NODE_REDIS_VERSIONS.filter((version) => !version.name.startsWith('node-redis v4'));

describe.each(CLOSABLE_MID_SUBSCRIBE)(
  "a node-redis cluster whose servers stop answering before the wake-up subscription's reply: $name",
  (version) => {
    it('has its wake-up connection closed by close(), instead of left reconnecting (it kept the process alive)', async () => {
      const shards = await RedisClusterFleet.start(3);
      const nodeRedis = await connected(version.cluster(shards.seeds));
      // The duplicate the lock client makes for wake-ups: once connected, the servers stop, so its SUBSCRIBE is never answered.
      let subscriber: NodeRedisCluster | undefined;
      const duplicate = nodeRedis.duplicate.bind(nodeRedis);
      (nodeRedis as { duplicate: () => NodeRedisCluster }).duplicate = () => {
        const made = duplicate();
        const connect = made.connect.bind(made);
        (made as { connect: () => Promise<unknown> }).connect = () =>
          connect().then(async (value) => (await Promise.all(shards.nodes.map((n) => n.pause())), value));
        return (subscriber = made);
      };
      const locks = new Redlock({ nodes: [nodeRedis as NodeSpec, ...standalone.urls] });
      try {
        await until(() => shards.nodes.every((n) => n.paused), 'the servers stopped after the subscriber connected');
        await locks.close();
        await until(() => subscriber!.isOpen === false, 'the wake-up connection closed');
      } finally {
        await Promise.all(shards.nodes.map((n) => n.resume()));
        await destroyClient(nodeRedis);
        await shards.stop();
      }
    });
  },
);
