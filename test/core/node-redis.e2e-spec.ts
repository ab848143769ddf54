/**
 * node-redis clients (`createClient` of redis v4, v5, v6) as lock nodes: the
 * shared lock behaviour suite once per version and protocol, then what is
 * particular to the adapter. One fleet of three nodes for the whole file.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { inspect } from 'node:util';
import { InvalidArgumentError, Redlock, type LockEvent, type NodeSpec, type RedlockOptions } from '../../lib/index.js';
import { connectionFor } from '../../lib/core/clients/connection-for.js';
import { NodeRedisConnection } from '../../lib/core/clients/node-redis.connection.js';
import { ACQUIRE, INSPECT } from '../../lib/core/scripts.js';
import { describeLockBehaviour } from '../testing/lock-behaviour.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';
import { keysLeft } from '../support/node-stats.js';
import { connected, closeClient, NODE_REDIS_VERSIONS, type NodeRedisClient } from '../support/node-redis-clients.js';
import { until } from '../support/until.js';
import * as redis4 from 'redis4';
import * as redis5 from 'redis5';
import * as redis6 from 'redis6';
import { TEST_NODE_TIMEOUT } from '../support/timeouts.js';

let fleetStarted: Promise<RedisFleet> | undefined;
let admin: Promise<Redis[]> | undefined;
/** The file's one fleet, started by whichever suite comes first. */
const sharedFleet = () => (fleetStarted ??= startFleet(3));
/** ioredis connections for looking behind the lock client's back. */
const raw = () => (admin ??= sharedFleet().then((fleet) => fleet.urls.map((url) => new Redis(url))));

afterAll(async () => {
  (await admin)?.forEach((r) => r.disconnect());
  await (await fleetStarted)?.stop();
});

for (const version of NODE_REDIS_VERSIONS) {
  describeLockBehaviour(`${version.name} clients (@redis/client ${version.version})`, async () => {
    const fleet = await sharedFleet();
    const nodes = await Promise.all(fleet.urls.map((url) => connected(version.client(url))));
    const nodesRaw = await raw();
    return {
      nodes,
      deleteKey: async (i, key) => void (await nodesRaw[i]!.del(key)),
      flush: async () => void (await Promise.all(nodesRaw.map((r) => r.flushall()))),
      stop: async () => void (await Promise.all(nodes.map(closeClient))),
    };
  });
}

describe.each(NODE_REDIS_VERSIONS)('the node-redis adapter: $name', (version) => {
  let fleet: RedisFleet;
  let nodesRaw: Redis[];
  const clients: Redlock[] = [];
  const opened: NodeRedisClient[] = [];

  /**
   * Connected node-redis clients of every node; they reconnect at least every
   * 200 ms (v6's default backs off to seconds, which only slows the tests).
   * Options of their own each: node-redis writes the URL's address into `socket`.
   */
  const nodeClients = (
    options: () => Record<string, unknown> = () => ({ socket: { reconnectStrategy: (n: number) => Math.min(n * 50, 200) } }),
  ) => Promise.all(fleet.urls.map((url) => connected(version.client(url, options())))).then((nodes) => (opened.push(...nodes), nodes));
  const client = (nodes: NodeRedisClient[], options: Partial<RedlockOptions> = {}) => {
    const redlock = new Redlock({
      nodes: nodes as NodeSpec[],
      retryDelay: 10,
      retryJitter: 10,
      nodeTimeout: TEST_NODE_TIMEOUT,
      ...options,
    });
    clients.push(redlock);
    return redlock;
  };

  beforeAll(async () => {
    fleet = await sharedFleet();
    nodesRaw = await raw();
  });
  afterEach(async () => {
    for (let i = 0; i < fleet.size; i++) if (fleet.nodes[i]!.paused) await fleet.resume(i);
    await Promise.all(clients.splice(0).map((c) => c.close()));
    await Promise.all(opened.splice(0).map(closeClient));
    for (let i = 0; i < fleet.size; i++) if (!fleet.nodes[i]!.running) await fleet.restart(i);
    await Promise.all(nodesRaw.map((r) => r.flushall()));
  });

  it('is recognised by its shape and known by its address and database, never its password', () => {
    const port = fleet.nodes[0]!.port;
    const nodeRedis = version.client(`redis://user:hunter2@localhost:${port}/3`);
    const { connection, owned } = connectionFor(nodeRedis as NodeSpec);
    expect(connection).toBeInstanceOf(NodeRedisConnection);
    expect([owned, connection.isCluster, connection.identity]).toEqual([false, false, `127.0.0.1:${port}/3`]);
    expect(inspect(connection, { depth: 5, showHidden: true })).not.toContain('hunter2');
    // The same server and database given as an ioredis URL: one node, not two.
    const error = (() => {
      try {
        new Redlock({ nodes: [nodeRedis as NodeSpec, `redis://127.0.0.1:${port}/3`] });
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect((error as Error).message).toMatch(/a server different from nodes\[0\]/);
  });

  it('reports a connection dropped with a command in flight as lost once, fails the command, and is ready again after', async () => {
    const [node] = await nodeClients();
    const connection = new NodeRedisConnection(node!);
    const events: string[] = [];
    for (const event of ['ready', 'lost', 'end'] as const) connection.on(event, () => events.push(event));
    await fleet.pause(0);
    const answer = new Promise<unknown>((resolve) => connection.evalsha(INSPECT, ['a', 'b', 'c'], [], resolve, Infinity));
    await fleet.kill(0); // the socket drops with the script in flight; reconnects are refused meanwhile
    expect(await answer).toHaveProperty('message'); // an Error, of node-redis's realm or of node:net's
    await fleet.restart(0);
    await until(() => events.includes('ready'), 'ready again');
    expect([events, connection.isReady, connection.state]).toEqual([['lost', 'ready'], true, 'ready']);
  });

  it('says end when the client gives up reconnecting, which node-redis reports only as an error', async () => {
    const [node] = await nodeClients(() => ({ socket: { reconnectStrategy: false } }));
    const connection = new NodeRedisConnection(node!);
    const events: string[] = [];
    for (const event of ['lost', 'end'] as const) connection.on(event, () => events.push(event));
    await fleet.kill(0);
    await until(() => events.includes('end'), 'end');
    // v6 says both on one event: their order is the listeners'.
    expect([events.sort(), connection.state]).toEqual([['end', 'lost'], 'closed']);
  });

  it('sees a restarted node through INFO after the reconnect (restart guard)', async () => {
    const watcher = client(await nodeClients()); // restartGuard 'auto': the window is the longest ttl used
    const events: LockEvent[] = [];
    watcher.subscribe((e) => events.push(e));
    await (await watcher.acquire('window', 10_000)).release();
    // Every node's run id read before the kill: a node whose first INFO had not
    // answered yet never voted, and is rightly not reported as restarted (next test).
    await until(async () => (await watcher.ping()).every((n) => n.status === 'up'), 'every node verified');
    await fleet.kill(2);
    await fleet.restart(2);
    await until(() => events.some((e) => e.type === 'node-restarted'), 'the restart seen');
    expect((await watcher.ping()).map((n) => n.excluded)).toEqual([undefined, undefined, true]);
    await (await watcher.acquire('guarded', 5000, { retryCount: 0 })).release(); // nodes 0 and 1 are a quorum
  });

  it('does not report as restarted a node whose run id it never read: the node never voted', async () => {
    const nodes = await nodeClients();
    await fleet.pause(2); // its first INFO goes unanswered: it stays out of every quorum
    const watcher = client(nodes, { nodeTimeout: 100 });
    const events: LockEvent[] = [];
    watcher.subscribe((e) => events.push(e));
    await (await watcher.acquire('window', 10_000)).release(); // on nodes 0 and 1
    await fleet.kill(2);
    await fleet.restart(2);
    await until(async () => (await watcher.ping()).every((n) => n.status === 'up'), 'the restarted node verified and counted');
    expect(events.filter((e) => e.type === 'node-restarted')).toEqual([]);
  });

  it('falls back to EVAL when a node lost its script cache (SCRIPT FLUSH)', async () => {
    const redlock = client(await nodeClients());
    await (await redlock.acquire('cached', 5000)).release();
    await Promise.all(nodesRaw.map((r) => r.script('FLUSH')));
    await (await redlock.acquire('cached', 5000)).release();
    await until(
      async () =>
        (await Promise.all(nodesRaw.map(async (r) => ((await r.script('EXISTS', ACQUIRE.sha)) as number[])[0]))).every((c) => c === 1),
      'the script cached again on every node',
    );
  });

  it('a paused node: acquire returns within the node timeout, and nothing is left behind when it resumes', async () => {
    const redlock = client(await nodeClients(), { nodeTimeout: 100, restartGuard: 0 });
    await (await redlock.acquire('warm', 5000)).release();
    await fleet.pause(2);
    const started = performance.now();
    const lock = await redlock.acquire('paused', 5000);
    expect(performance.now() - started).toBeLessThan(100 + 100);
    await lock.release();
    await fleet.resume(2);
    await until(async () => (await redlock.ping()).every((n) => n.status === 'up'), 'the backlog answered');
    expect(await keysLeft(nodesRaw, 'redlock:lock:*')).toEqual([]);
  });

  it("a node that is down, with the client's offline queue on: nothing is queued per call past the node timeout", async () => {
    const nodes = await nodeClients();
    let queued = 0;
    const send = nodes[2]!.sendCommand.bind(nodes[2]);
    Object.assign(nodes[2]!, { sendCommand: (...args: Parameters<typeof send>) => (queued++, send(...args)) });
    const redlock = client(nodes, { nodeTimeout: 50, restartGuard: 0 });
    await (await redlock.acquire('warm', 5000)).release();
    await fleet.kill(2);
    await until(() => !nodes[2]!.isReady, 'the drop seen');
    const downAt = performance.now();
    let cycle = 0;
    while (performance.now() - downAt < 50 + 20) await (await redlock.acquire(`down:${cycle++}`, 5000)).release();
    const afterWindow = queued;
    for (let i = 0; i < 50; i++) await (await redlock.acquire(`down:${cycle++}`, 5000)).release();
    expect(queued).toBe(afterWindow);
    // Back up: the queue is sent to a server that restarted empty; it leaves no key there.
    await fleet.restart(2);
    await until(async () => (await redlock.ping()).every((n) => n.status === 'up'), 'node 2 back');
    expect(await nodesRaw[2]!.keys('redlock:lock:down:*')).toEqual([]);
  });

  it('closes its wake-up connections with the lock client, and leaves the application its clients', async () => {
    const nodes = await nodeClients();
    const connections = async () =>
      (await Promise.all(nodesRaw.map((r) => r.client('LIST') as Promise<string>))).join('').trim().split('\n').length;
    // Subscribers of the lock client's own channel, per node: a connection count alone also saw an earlier
    // test's connection close meanwhile (9 of 10 once, under load).
    const subscribers = (channel: string) =>
      Promise.all(nodesRaw.map(async (r) => ((await r.pubsub('NUMSUB', channel)) as [string, number])[1]));
    const before = await connections();
    const redlock = client(nodes); // fair waiting (the default) subscribes up front
    await until(() => subscribed(redlock), 'subscribed');
    const { channel } = (redlock as unknown as { notifier: { channel: string } }).notifier;
    expect(await subscribers(channel)).toEqual(nodes.map(() => 1));
    await redlock.close();
    await until(async () => (await subscribers(channel)).every((n) => n === 0), 'the wake-up connections unsubscribed');
    await until(async () => (await connections()) <= before, 'the wake-up connections closed');
    expect(nodes.every((n) => n.isReady)).toBe(true);
  });
});

/** Whether the client's wake channel is subscribed on every node. */
const subscribed = (redlock: Redlock) => (redlock as unknown as { notifier: { isSubscribed: boolean } }).notifier.isSubscribed;

describe('node-redis clients set up their own way', () => {
  it('are node specs as their own types say, without a cast (checked by tsc)', () => {
    const seeds = { rootNodes: [{ url: 'redis://127.0.0.1:7000' }] };
    const specs: NodeSpec[] = [
      ...[redis4.createClient(), redis5.createClient(), redis5.createClient({ RESP: 3 }), redis6.createClient()],
      ...[redis4.createCluster(seeds), redis5.createCluster(seeds), redis6.createCluster(seeds)],
    ];
    expect(specs).toHaveLength(7);
  });

  /** Takes and releases a lock with a fencing token, and inspects it, over `nodes`. */
  const lockOver = async (nodes: unknown[]) => {
    const redlock = new Redlock({ nodes: nodes as NodeSpec[], nodeTimeout: TEST_NODE_TIMEOUT, identity: { app: 'own-way' } });
    try {
      const lock = await redlock.acquire('own-way', 5000);
      expect(lock.fencingToken).toBeGreaterThan(0);
      expect(await redlock.inspect('own-way')).toMatchObject({ held: true, heldOn: 3, identity: { app: 'own-way' } });
      await lock.release();
      expect(await redlock.inspect('own-way')).toMatchObject({ held: false, heldOn: 0 });
    } finally {
      await redlock.close();
    }
  };

  it('a v4 client in legacy mode (a callback sendCommand) is driven through its promise API', async () => {
    const fleet = await sharedFleet();
    const nodes = await Promise.all(fleet.urls.map((url) => connected(redis4.createClient({ url, legacyMode: true }))));
    try {
      await lockOver(nodes);
    } finally {
      await Promise.all(nodes.map((n) => n.v4.quit()));
    }
  });

  /** A version's `createClient`, typed for both: their option types differ in generics only. */
  type Create = (options: object) => NodeRedisClient & { close(): Promise<void> };
  it.each([
    ['v5', redis5.createClient as unknown as Create, redis5.RESP_TYPES.BLOB_STRING],
    ['v6', redis6.createClient as unknown as Create, redis6.RESP_TYPES.BLOB_STRING],
  ] as const)(
    'a %s client whose replies are mapped to Buffers gets the default types for the lock commands',
    async (_, createClient, blob) => {
      const fleet = await sharedFleet();
      const bufferReplies = { commandOptions: { typeMapping: { [blob]: Buffer } } };
      const nodes = await Promise.all(fleet.urls.map((url) => connected(createClient({ url, ...bufferReplies }))));
      try {
        expect(await nodes[0]!.sendCommand(['PING'])).toBe('PONG');
        expect(await nodes[0]!.sendCommand(['ECHO', 'x'])).toEqual(Buffer.from('x'));
        await lockOver(nodes);
      } finally {
        await Promise.all(nodes.map((n) => n.close()));
      }
    },
  );
});
