/**
 * An application's own tests with Jest's fake timers (`jest.useFakeTimers()`,
 * which fakes `process.nextTick` and `queueMicrotask` too): commands must still
 * be sent, woken waiters still woken, and in-memory nodes made before the fake
 * timers must follow the faked clock.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { Redlock } from '../../lib/index.js';
import { createMemoryNodes, createMemoryRedlock } from '../../lib/testing/index.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';
import { TEST_NODE_TIMEOUT } from '../support/timeouts.js';

let fleet: RedisFleet;
const clients: Redlock[] = [];
beforeAll(async () => {
  fleet = await startFleet(3);
});
afterEach(async () => {
  jest.useRealTimers();
  await Promise.all(clients.splice(0).map((c) => c.close()));
});
afterAll(() => fleet.stop());

describe('under Jest fake timers', () => {
  it('locks and releases on real nodes: the commands of a tick are not held for a faked tick', async () => {
    const redlock = new Redlock({ nodes: fleet.urls, nodeTimeout: TEST_NODE_TIMEOUT, retryCount: 0 });
    clients.push(redlock);
    await (await redlock.acquire('warm', 5000)).release(); // connected with real timers
    jest.useFakeTimers();
    const lock = await redlock.acquire('faked', 5000);
    await lock.release();
    expect(lock.isHeld).toBe(false);
  });

  it('in-memory nodes made before the fake timers expire keys on the faked clock, and wake a waiter on release', async () => {
    const nodes = createMemoryNodes(3);
    const holder = createMemoryRedlock({ nodes, retryCount: 0 });
    const waiter = createMemoryRedlock({ nodes, retryDelay: 60_000, retryJitter: 0 });
    clients.push(holder, waiter);
    jest.useFakeTimers();
    await holder.acquire('expiring', 1000);
    await jest.advanceTimersByTimeAsync(1500);
    const after = await holder.acquire('expiring', 1000);
    // A waiter is woken by the release itself (its next poll is a faked minute away).
    const waiting = waiter.acquire('expiring', 1000);
    await jest.advanceTimersByTimeAsync(0);
    await after.release();
    await expect(waiting).resolves.toMatchObject({ resources: ['expiring'] });
  });
});
