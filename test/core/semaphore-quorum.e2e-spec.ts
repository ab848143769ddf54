import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { Redlock, ResourceBusyError } from '../../lib/index.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';
import { TEST_NODE_TIMEOUT } from '../support/timeouts.js';

// A semaphore's permit is one of its slots, each a lock held on a majority (see
// SLOT_MARK in scripts.ts): it tolerates as many nodes down as a lock. Before
// slots, a permit of limit n needed N - ceil(N / (n + 1)) + 1 votes, every node's
// from a limit of N - 1 (here 2 on 3 nodes), so one node down stopped it.
describe('semaphore quorum', () => {
  let fleet: RedisFleet;
  let raw: Redis[];

  beforeAll(async () => {
    fleet = await startFleet(3);
    raw = fleet.urls.map((url) => new Redis(url));
  });
  afterAll(async () => {
    raw?.forEach((r) => r.disconnect());
    await fleet?.stop();
  });

  it('with one of 3 nodes down, a semaphore of limit 2 grants both permits on their own slots, extends and releases them, and refuses a third', async () => {
    const redlock = new Redlock({ nodes: fleet.urls, nodeTimeout: TEST_NODE_TIMEOUT, retryCount: 0 });
    try {
      raw[2]!.disconnect();
      await fleet.kill(2);
      const first = await redlock.acquire('pool', 10_000, { limit: 2 });
      const second = await redlock.acquire('pool', 10_000, { limit: 2 });
      await expect(redlock.acquire('pool', 10_000, { limit: 2 })).rejects.toBeInstanceOf(ResourceBusyError);
      // Each live node has both slots taken, by the same two holders on both.
      const slots = (r: Redis) => Promise.all([r.get('redlock:lock#0:pool'), r.get('redlock:lock#1:pool')]);
      const [a, b] = await Promise.all([slots(raw[0]!), slots(raw[1]!)]);
      expect(a.every((v) => v !== null)).toBe(true);
      expect(b).toEqual(a);
      await first.extend(10_000);
      expect(first.isHeld).toBe(true);
      await first.release();
      const third = await redlock.acquire('pool', 10_000, { limit: 2 });
      await Promise.all([second.release(), third.release()]);
    } finally {
      await redlock.close();
    }
  });
});
