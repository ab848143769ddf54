/**
 * The application's own ioredis clients, made with the options applications
 * use (another copy of the package, as an application that depends on ioredis
 * has): `keyPrefix`, `stringNumbers`, the offline queue ioredis keeps by
 * default, and a client the application already closed.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import type { Redis as RedisClass, RedisOptions } from 'ioredis';
import {
  InvalidArgumentError,
  QuorumUnreachableError,
  Redlock,
  ResourceBusyError,
  type AcquireOptions,
  type NodeSpec,
} from '../../lib/index.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';
import { otherIoredis, otherIoredisCluster, QUICK_CLOSE } from '../support/other-ioredis.js';
import { RedisClusterFleet } from '../support/redis-cluster.js';
import { until } from '../support/until.js';
import { TEST_NODE_TIMEOUT } from '../support/timeouts.js';
import { TcpProxy } from '../faults/tcp-proxy.js';

let fleet: RedisFleet;
let Redis: Awaited<ReturnType<typeof otherIoredis>>;
const opened: RedisClass[] = [];
const redlocks: Redlock[] = [];

beforeAll(async () => {
  [fleet, Redis] = await Promise.all([startFleet(3), otherIoredis()]);
});
afterEach(async () => {
  await Promise.all(redlocks.splice(0).map((r) => r.close()));
  for (const client of opened.splice(0)) client.disconnect();
});
afterAll(() => fleet.stop());

/** The application's clients of the fleet, one per node. */
function appClients(options: RedisOptions = {}): RedisClass[] {
  const clients = fleet.urls.map((url) => new Redis(url, { ...QUICK_CLOSE, ...options }));
  for (const client of clients) client.on('error', () => undefined);
  opened.push(...clients);
  return clients;
}

function redlock(nodes: readonly (string | RedisClass)[], options: { fencing?: boolean; fairWaiting?: boolean } = {}) {
  const made = new Redlock({ nodes: nodes as NodeSpec[], nodeTimeout: TEST_NODE_TIMEOUT, ...options });
  redlocks.push(made);
  return made;
}

const once: AcquireOptions = { retryCount: 0 };

describe('clients made with keyPrefix', () => {
  it("name the lock's keys by the lock's own prefix, so that they exclude locks taken over URLs and list() finds them", async () => {
    const prefixed = redlock(appClients({ keyPrefix: 'app:' }));
    const viaUrls = redlock(fleet.urls);
    const lock = await prefixed.acquire('report', 10_000);
    await expect(viaUrls.acquire('report', 10_000, once)).rejects.toBeInstanceOf(ResourceBusyError);
    const [plain] = appClients();
    expect(await plain!.pttl('redlock:lock:report')).toBeGreaterThan(0);
    expect(await plain!.exists('app:redlock:lock:report')).toBe(0);
    expect((await prefixed.list()).locks.map((l) => l.resource)).toEqual(['report']);
    await lock.release();
    await (await viaUrls.acquire('report', 10_000, once)).release();
  });

  it('leave nothing queued when a waiter gives up: the resource is free once its holder releases it', async () => {
    const lock = await redlock(appClients({ keyPrefix: 'app:' })).acquire('queue', 10_000);
    const waiter = redlock(appClients({ keyPrefix: 'app:' }));
    await expect(waiter.acquire('queue', 10_000, { acquireTimeout: 300, retryDelay: 5000 })).rejects.toBeInstanceOf(ResourceBusyError);
    await lock.release();
    await (await redlock(appClients({ keyPrefix: 'app:' })).acquire('queue', 10_000, once)).release();
  });

  it('wake a waiter when the lock is released (no poll: its retry delay is longer than its deadline)', async () => {
    const lock = await redlock(appClients({ keyPrefix: 'app:' })).acquire('wake', 10_000);
    const waiter = redlock(appClients({ keyPrefix: 'app:' }));
    const waiting = waiter.acquire('wake', 10_000, { acquireTimeout: 20_000, retryDelay: 60_000, retryJitter: 0 });
    await until(async () => (await waiter.inspect('wake')).waiters > 0, 'the waiter queued');
    await lock.release();
    await (await waiting).release();
  });
});

describe('clients made with stringNumbers (integer replies read as strings)', () => {
  it.each<[string, { fencing?: boolean; fairWaiting?: boolean }]>([
    ['the defaults', {}],
    ['the plain protocol', { fencing: false, fairWaiting: false }],
  ])('take a free resource, extend and release it, with %s', async (_, options) => {
    const locks = redlock(appClients({ stringNumbers: true }), options);
    const lock = await locks.acquire('numbers', 10_000, once);
    if (options.fencing === undefined) expect(typeof lock.fencingToken).toBe('number');
    await lock.extend(20_000);
    expect(await locks.inspect('numbers')).toMatchObject({ held: true });
    await lock.release();
    await (await redlock(fleet.urls).acquire('numbers', 10_000, once)).release();
  });

  it.each<[string, AcquireOptions]>([
    ["a semaphore's permit", { limit: 2 }],
    ['a write lock', { mode: 'write' }],
  ])('take, extend and release %s, and inspect() reads its holder', async (_, kind) => {
    const locks = redlock(appClients({ stringNumbers: true }));
    const permit = await locks.acquire('permits', 10_000, { ...once, ...kind });
    expect(typeof permit.fencingToken).toBe('number');
    await permit.extend(20_000);
    const seen = await locks.inspect('permits');
    expect(seen.holders).toHaveLength(1);
    expect(typeof seen.holders[0]!.ttl).toBe('number');
    await permit.release();
    expect((await locks.inspect('permits')).held).toBe(false);
  });
});

describe('clients with an offline queue (ioredis default)', () => {
  it('fail a call at once on nodes that are down, instead of queueing it past the node timeout', async () => {
    const local = await startFleet(3);
    try {
      // BullMQ's setting; and reconnects further apart than the node timeout, as ioredis's own grow to.
      const clients = local.urls.map((url) => new Redis(url, { maxRetriesPerRequest: null, retryStrategy: () => 2000, ...QUICK_CLOSE }));
      for (const client of clients) client.on('error', () => undefined);
      opened.push(...clients);
      const locks = redlock(clients);
      await (await locks.acquire('down', 10_000, once)).release();
      await Promise.all([local.kill(1), local.kill(2)]);
      await until(() => clients[1]!.status !== 'ready' && clients[2]!.status !== 'ready', 'the clients seeing the nodes gone');
      // With the client's retries: a node that refuses ends the call at the first attempt, one that times out does not.
      const error = await locks.acquire('down', 10_000).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(QuorumUnreachableError);
      const { attempts } = error as QuorumUnreachableError;
      expect(attempts).toHaveLength(1);
      expect(attempts[0]!.nodes.slice(1).map((n) => n.outcome)).toEqual(['error', 'error']);
    } finally {
      await local.stop();
    }
  });
});

describe('clients with an offline queue, reconnecting to a node that accepts but does not answer', () => {
  it('fail a call at once, instead of queueing it until its timeout (the listing waited 5 s per such node)', async () => {
    const proxy = await TcpProxy.latency(fleet.ports[2]!, 0, 0);
    try {
      const hanging = new Redis(`redis://127.0.0.1:${proxy.port}`, QUICK_CLOSE);
      hanging.on('error', () => undefined);
      opened.push(hanging);
      const locks = redlock([...appClients().slice(0, 2), hanging]);
      await (await locks.acquire('reconnecting', 10_000, once)).release();
      // The connection is cut; ioredis reconnects and waits for ever for its ready check's answer.
      proxy.silence();
      await until(() => hanging.status === 'connect', 'the client reconnected, its ready check unanswered');
      const seen = await locks.inspect('reconnecting');
      expect(seen.nodes.map((node) => node.state)).toEqual(['free', 'free', 'error']);
      const started = performance.now();
      expect((await locks.list('*')).scanned).toBe(2);
      expect(performance.now() - started).toBeLessThan(1500);
    } finally {
      await proxy.stop();
    }
  });
});

describe('a Cluster client of the application (offline queue by default) whose servers are all gone', () => {
  it('fails a call at once while it reconnects, and is not listed as scanned (it knew no master to scan)', async () => {
    const Cluster = await otherIoredisCluster();
    const shards = await RedisClusterFleet.start(3);
    const cluster = new Cluster(shards.seeds, { redisOptions: QUICK_CLOSE });
    cluster.on('error', () => undefined);
    try {
      const locks = redlock([cluster as unknown as RedisClass, ...appClients().slice(0, 2)]);
      await (await locks.acquire('cluster-gone', 10_000, once)).release();
      // Answered by all three (the Cluster too, after the commands it had queued while connecting).
      expect((await locks.inspect('cluster-gone')).nodes.map((node) => node.state)).toEqual(['free', 'free', 'free']);
      await shards.stop();
      // ioredis tries again and again to reach a seed; its commands wait meanwhile in its offline queue.
      await until(() => cluster.status === 'reconnecting', 'the Cluster client reconnecting');
      const seen = await locks.inspect('cluster-gone');
      expect(seen.nodes.map((node) => node.state)).toEqual(['error', 'free', 'free']);
      const started = performance.now();
      expect((await locks.list('*')).scanned).toBe(2);
      expect(performance.now() - started).toBeLessThan(1500);
    } finally {
      cluster.disconnect();
      await shards.stop();
    }
  });
});

describe('a client the application already closed', () => {
  it('counts as down at once, without waiting for a connection that will not come', async () => {
    const clients = appClients();
    await Promise.all(clients.map((client) => client.ping()));
    await Promise.all(clients.map((client) => client.quit()));
    await until(() => clients.every((client) => client.status === 'end'), 'the clients closed');
    const locks = redlock(clients);
    const started = performance.now();
    await expect(locks.acquire('closed', 10_000, once)).rejects.toBeInstanceOf(QuorumUnreachableError);
    // Waiting for the connection took CONNECT_WAIT (2 s) before.
    expect(performance.now() - started).toBeLessThan(1500);
  });
});

describe('a RESP2 client in subscriber mode (the application passed its pub/sub client by mistake)', () => {
  it('is refused with a typed error where the nodes are given, not reported unreachable at every call', async () => {
    // RESP2 (ioredis 5, or `protocol: 2`): a subscribed connection refuses other commands. Over RESP3 it runs them.
    const clients = appClients({ protocol: 2 });
    await clients[1]!.subscribe('app:events');
    expect(() => redlock(clients)).toThrow(InvalidArgumentError);
    expect(() => redlock(clients)).toThrow(/nodes\[1\].*subscriber mode/);
    // Not named by the EventEmitter ioredis mixes into its clients.
    expect(() => redlock(clients)).not.toThrow(/EventEmitter/);
  });

  it('serves as a node over RESP3 (ioredis 6 by default), where a subscribed connection runs other commands', async () => {
    const clients = appClients();
    await clients[1]!.subscribe('app:events');
    const lock = await redlock(clients).acquire('subscribed', 10_000, once);
    await lock.extend(20_000);
    await lock.release();
  });
});
