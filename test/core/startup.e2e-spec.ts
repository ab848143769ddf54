/**
 * The first call of a client that has just started, while its connections
 * are still being made.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { Redlock, type NodeSpec } from '../../lib/index.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';
import { TEST_NODE_TIMEOUT } from '../support/timeouts.js';

let fleet: RedisFleet;
beforeAll(async () => {
  fleet = await startFleet(3);
  // The scripts already loaded on every node, as on nodes other clients use: a first call
  // runs them by hash at once, with no NOSCRIPT round.
  const warm = new Redlock({ nodes: fleet.urls, nodeTimeout: TEST_NODE_TIMEOUT });
  await (await warm.acquire('warm', 1000, { limit: 2 })).release();
  await warm.close();
});
afterAll(() => fleet.stop());

describe('the first call after a start', () => {
  it("takes a semaphore's permit, which needs more nodes than a majority, once they are up and checked (one still connecting)", async () => {
    // Limit 2 on 3 nodes: a permit needs all 3. Node 2 accepts the application's connection
    // but answers nothing until resumed, after the call began: its client sends the call's
    // command as soon as it is ready, before the restart guard's check of the node.
    await fleet.pause(2);
    const clients = fleet.urls.map((url) => new Redis(url).on('error', () => undefined));
    const redlock = new Redlock({ nodes: clients as NodeSpec[], nodeTimeout: TEST_NODE_TIMEOUT });
    try {
      await redlock.ready();
      const acquiring = redlock.acquire('startup', 10_000, { limit: 2, retryCount: 0 });
      await fleet.resume(2);
      const permit = await acquiring;
      expect(permit.limit).toBe(2);
      await permit.release();
    } finally {
      await fleet.resume(2);
      await redlock.close();
      for (const client of clients) client.disconnect();
    }
  });
});
