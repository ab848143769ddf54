import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redlock, type Lock } from '../../lib/index.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';
import { TEST_NODE_TIMEOUT } from '../support/timeouts.js';

let fleet: RedisFleet;
let redlock: Redlock;
beforeAll(async () => {
  fleet = await startFleet(3);
  redlock = new Redlock({ nodes: fleet.urls, retryCount: 0, nodeTimeout: TEST_NODE_TIMEOUT });
});
afterAll(async () => {
  await redlock?.close();
  await fleet?.stop();
});

describe('await using', () => {
  it('releases the lock when the block exits normally', async () => {
    let inside: Lock | undefined;
    {
      await using lock = await redlock.acquire('disposed', 10_000);
      inside = lock;
      expect(lock.isHeld).toBe(true);
      await expect(redlock.acquire('disposed', 10_000)).rejects.toMatchObject({ code: 'RESOURCE_BUSY' });
    }
    expect(inside.isHeld).toBe(false);
    const again = await redlock.acquire('disposed', 10_000);
    await again.release();
  });

  it('releases the lock when the block throws, and the block’s error is the one seen', async () => {
    let inside: Lock | undefined;
    const run = async () => {
      await using lock = await redlock.acquire('disposed-throw', 10_000);
      inside = lock;
      throw new Error('the work failed');
    };
    await expect(run()).rejects.toThrow('the work failed');
    expect(inside!.isHeld).toBe(false);
    expect((await redlock.inspect('disposed-throw')).heldOn).toBe(0);
  });

  it('leaves a lock released in the block alone, and keeps the block’s result', async () => {
    const run = async () => {
      await using lock = await redlock.acquire('disposed-early', 10_000);
      await lock.release();
      return lock.fencingToken;
    };
    expect(await run()).toEqual(expect.any(Number));
  });
});
