/**
 * The application's own client handed to several lock clients (a module per
 * namespace, the CLI beside the app, a testing module per test): each lock
 * client listens to the client's events, and past ten listeners of one event
 * Node prints a MaxListenersExceededWarning into the application's logs (seen
 * in CI with four lock clients over one node-redis client).
 */
import { createHook } from 'node:async_hooks';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redlock, type NodeSpec } from '../../lib/index.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';
import { otherIoredis, QUICK_CLOSE } from '../support/other-ioredis.js';
import { connected, closeClient, NODE_REDIS_VERSIONS } from '../support/node-redis-clients.js';
import { TEST_NODE_TIMEOUT } from '../support/timeouts.js';
import { until } from '../support/until.js';

/** The events the adapters listen to, on ioredis and node-redis clients. */
const EVENTS = ['ready', 'close', 'end', 'error', 'connect', 'terminated'];

interface Listened {
  listenerCount(event: string): number;
}
const counts = (client: Listened) => EVENTS.map((event) => client.listenerCount(event));

let fleet: RedisFleet;
beforeAll(async () => {
  fleet = await startFleet(1);
});
afterAll(() => fleet.stop());

describe('a client of the application shared by several lock clients', () => {
  const cases: [string, () => Promise<{ client: Listened; close: () => Promise<void> }>][] = [
    [
      'ioredis (another copy of the package)',
      async () => {
        const Redis = await otherIoredis();
        const client = new Redis(fleet.urls[0]!);
        client.on('error', () => undefined);
        return { client, close: async () => void client.disconnect() };
      },
    ],
    ...NODE_REDIS_VERSIONS.map((version): (typeof cases)[number] => [
      version.name,
      async () => {
        const client = await connected(version.client(fleet.urls[0]!));
        return { client: client as unknown as Listened, close: () => closeClient(client) };
      },
    ]),
  ];

  it.each(cases)('%s: one listener per event however many lock clients use it, none left after they close', async (_, open) => {
    const { client, close } = await open();
    const redlocks: Redlock[] = [];
    try {
      const before = counts(client);
      const add = () => {
        const redlock = new Redlock({
          nodes: [client as unknown as NodeSpec],
          nodeTimeout: TEST_NODE_TIMEOUT,
          prefix: `app${redlocks.length}`,
        });
        redlocks.push(redlock);
        return redlock;
      };
      await (await add().acquire('job', 5000)).release();
      const withOne = counts(client);
      for (let i = 0; i < 11; i++) await (await add().acquire('job', 5000)).release();
      expect(counts(client)).toEqual(withOne);
      expect(Math.max(...counts(client))).toBeLessThanOrEqual(10);
      await Promise.all(redlocks.map((r) => r.close()));
      expect(counts(client)).toEqual(before);
    } finally {
      await Promise.all(redlocks.map((r) => r.close()));
      await close();
    }
  });
});

describe('a client of the application whose node is down', () => {
  it('gains no listener per call while down, keeps none after the lock clients close, and reads count it down at once', async () => {
    const live = await startFleet(2);
    const Redis = await otherIoredis();
    // ioredis's defaults: an offline queue, reconnecting for ever to a port nobody listens on.
    const dead = new Redis('redis://127.0.0.1:1');
    dead.on('error', () => undefined);
    // Each reconnect attempt's connect() adds ioredis's own 'ready' and 'close' listeners until it
    // fails: counted between attempts (under load an attempt can last long enough to be seen).
    const settledCounts = async () => {
      await until(() => dead.status === 'reconnecting', 'between two reconnect attempts');
      return counts(dead);
    };
    const before = await settledCounts();
    const redlocks: Redlock[] = [];
    try {
      for (let i = 0; i < 5; i++) {
        const redlock = new Redlock({
          nodes: [...live.urls, dead as unknown as NodeSpec],
          nodeTimeout: TEST_NODE_TIMEOUT,
          prefix: `down${i}`,
        });
        redlocks.push(redlock);
        await (await redlock.acquire('job', 5000)).release();
      }
      const [first] = redlocks;
      await first!.inspect('job');
      const withAll = await settledCounts();
      // Each ping (a health check) and read used to add listeners, each keeping its closed lock client alive.
      for (let i = 0; i < 20; i++) {
        await first!.ping(100);
        await first!.inspect('job');
      }
      // (A wait under way may end meanwhile: fewer, never more.)
      (await settledCounts()).forEach((count, i) => expect(count).toBeLessThanOrEqual(withAll[i]!));
      // Counted down at once: neither the 2 s first-connection wait nor a SCAN queued offline until the listing's timeout.
      const started = performance.now();
      await first!.inspect('job');
      await first!.list('*');
      expect(performance.now() - started).toBeLessThan(1500);
      await Promise.all(redlocks.map((r) => r.close()));
      expect(await settledCounts()).toEqual(before);
    } finally {
      await Promise.all(redlocks.map((r) => r.close()));
      dead.disconnect();
      await live.stop();
    }
  });
});

/**
 * Runs `call`, then reports the timers it left running that keep the process
 * alive (ref'd, neither fired nor cleared `settle` ms after it ended), with
 * their delays: what a process exiting after `app.close()` waits for.
 */
async function timersLeftBy(call: () => Promise<unknown>, settle: number): Promise<number[]> {
  const live = new Map<number, { hasRef(): boolean; _idleTimeout: number }>();
  let calling = true;
  const hook = createHook({
    init: (id, type, _trigger, resource) => calling && type === 'Timeout' && live.set(id, resource as never),
    destroy: (id) => live.delete(id),
  }).enable();
  try {
    await call();
    calling = false;
    await new Promise((resolve) => setTimeout(resolve, settle));
  } finally {
    hook.disable();
  }
  // A cleared timer (delay -1) may not have been destroyed yet.
  return [...live.values()].filter((timer) => timer._idleTimeout >= 0 && timer.hasRef()).map((timer) => timer._idleTimeout);
}

describe('a lock client closed while a node of an application client is down', () => {
  it('leaves no timer behind that keeps the process alive', async () => {
    const live = await startFleet(2);
    const Redis = await otherIoredis();
    // ioredis's defaults (disconnectTimeout 2 s), reconnecting for ever to a port nobody listens on.
    const dead = new Redis('redis://127.0.0.1:1');
    dead.on('error', () => undefined);
    const options = { nodes: [...live.urls, dead as unknown as NodeSpec], nodeTimeout: TEST_NODE_TIMEOUT };
    const holder = new Redlock(options);
    const waiter = new Redlock(options);
    try {
      const lock = await holder.acquire('exit', 5000);
      // A wait opens the waiter's wake-up connections: one per node, the down one's made from `dead`.
      const waiting = waiter.acquire('exit', 5000, { retryCount: 1, retryDelay: 100 }).catch(() => undefined);
      await until(() => waiter.stats.waiting === 1, 'the waiter waiting');
      await lock.release();
      await waiting;
      // Past the 100 ms the library gives its own connections to confirm a close.
      expect(await timersLeftBy(() => Promise.all([holder.close(), waiter.close()]), 300)).toEqual([]);
    } finally {
      await Promise.all([holder.close(), waiter.close()]);
      dead.disconnect();
      await live.stop();
    }
  });
});

describe('clients of the application whose servers are still starting', () => {
  it('are waited for at the first call, as before: failing their first connection is not being down', async () => {
    const fleet = await startFleet(3);
    const Redis = await otherIoredis();
    await Promise.all([fleet.kill(1), fleet.kill(2)]);
    const clients = [1, 2].map((i) => new Redis(fleet.urls[i]!, { retryStrategy: () => 20 }));
    let failures = 0;
    clients.forEach((c) => c.on('error', () => failures++));
    // A quorum needs one of them: the servers start after the first call began.
    const redlock = new Redlock({ nodes: [fleet.urls[0]!, ...(clients as unknown as NodeSpec[])], nodeTimeout: TEST_NODE_TIMEOUT });
    try {
      const before = failures;
      await until(() => failures >= before + 2, 'their connects refused since the lock client was made');
      const acquiring = redlock.acquire('boot', 5000, { retryCount: 0 });
      await Promise.all([fleet.restart(1), fleet.restart(2)]);
      await (await acquiring).release();
    } finally {
      await redlock.close();
      clients.forEach((c) => c.disconnect());
      await fleet.stop();
    }
  });
});

describe('clients of the application that never connect', () => {
  it('let ready() resolve, and later calls fail at once, not after a wait each', async () => {
    const fleet = await startFleet(1);
    const Redis = await otherIoredis();
    const clients = [1, 2].map((port) => new Redis(`redis://127.0.0.1:${port}`, { retryStrategy: () => 20, ...QUICK_CLOSE }));
    clients.forEach((c) => c.on('error', () => undefined));
    const redlock = new Redlock({ nodes: [fleet.urls[0]!, ...(clients as unknown as NodeSpec[])], nodeTimeout: TEST_NODE_TIMEOUT });
    try {
      await redlock.ready(); // every node connected or failed once: it never resolved
      const started = performance.now();
      await expect(redlock.acquire('never', 5000, { retryCount: 0 })).rejects.toMatchObject({ code: 'QUORUM_UNREACHABLE' });
      expect(performance.now() - started).toBeLessThan(1500); // not CONNECT_WAIT (2 s) per call
    } finally {
      await redlock.close();
      clients.forEach((c) => c.disconnect());
      await fleet.stop();
    }
  });
});
