/**
 * iovalkey (the Valkey project's fork of ioredis) as lock nodes: its clients
 * have ioredis's shape, so the ioredis adapter takes them as they are. The
 * shared behaviour suite on standalone clients, then what could tell the fork
 * apart: a cluster, the types (the waiting, fencing and node-failure suites:
 * test/clients/iovalkey-suites.e2e-spec.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Valkey, Cluster as ValkeyCluster } from 'iovalkey';
import { Redis } from 'ioredis';
import { Redlock, type NodeSpec } from '../../lib/index.js';
import { connectionFor } from '../../lib/core/clients/connection-for.js';
import { IoredisConnection } from '../../lib/core/clients/ioredis.connection.js';
import { describeLockBehaviour } from '../testing/lock-behaviour.js';
import { RedisClusterFleet } from '../support/redis-cluster.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';
import { until } from '../support/until.js';

let fleetStarted: Promise<RedisFleet> | undefined;
const sharedFleet = () => (fleetStarted ??= startFleet(3));
afterAll(async () => {
  await (await fleetStarted)?.stop();
});

describeLockBehaviour('iovalkey clients', async () => {
  const fleet = await sharedFleet();
  const nodes = fleet.urls.map((url) => new Valkey(url));
  const raw = fleet.urls.map((url) => new Redis(url));
  return {
    nodes,
    deleteKey: async (i, key) => void (await raw[i]!.del(key)),
    flush: async () => void (await Promise.all(raw.map((r) => r.flushall()))),
    stop: async () => [...nodes, ...raw].forEach((c) => c.disconnect()),
  };
});

describe('the ioredis adapter with iovalkey clients', () => {
  it('takes them as they are: known by address and database, typed as node specs without a cast', () => {
    const valkey = new Valkey({ port: 7001, db: 2, lazyConnect: true });
    const spec: NodeSpec = valkey;
    const { connection, owned } = connectionFor(spec);
    expect(connection).toBeInstanceOf(IoredisConnection);
    expect([owned, connection.identity]).toEqual([false, '127.0.0.1:7001/2']);
    const cluster: NodeSpec = new ValkeyCluster([{ host: 'localhost', port: 7000 }], { lazyConnect: true });
    expect(connectionFor(cluster).connection.identity).toBe('cluster(127.0.0.1:7000)');
  });
  // A node down, paused, hung and killed: the node-failure suite (test/clients/iovalkey-suites.e2e-spec.ts).
});

describe('an iovalkey Cluster as a lock node', () => {
  let cluster: RedisClusterFleet;
  let standalone: RedisFleet;
  beforeAll(async () => {
    [cluster, standalone] = await Promise.all([RedisClusterFleet.start(3), sharedFleet()]);
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it('excludes concurrent holders, grows fencing tokens and wakes a waiter through the cluster pub/sub', async () => {
    const valkey = new ValkeyCluster(cluster.seeds);
    const nodes = [valkey, ...standalone.urls.slice(0, 2)];
    const holder = new Redlock({ nodes, retryCount: 1000, retryDelay: 2 });
    const waiter = new Redlock({ nodes, retryDelay: 5000, retryJitter: 0 });
    try {
      const tokens: number[] = [];
      await Promise.all(Array.from({ length: 8 }, () => holder.using('job', 2000, async (lock) => void tokens.push(lock.fencingToken!))));
      expect([...tokens].sort((a, b) => a - b)).toEqual(tokens);
      const held = await holder.acquire('woken', 10_000);
      const waiting = waiter.acquire('woken', 10_000);
      await until(async () => (await holder.inspect('woken')).waiters > 0, 'the waiter in the queue');
      const released = performance.now();
      await held.release();
      await (await waiting).release();
      expect(performance.now() - released).toBeLessThan(1000);
    } finally {
      await Promise.all([holder.close(), waiter.close()]);
      await valkey.quit().catch(() => undefined);
    }
  });
});
