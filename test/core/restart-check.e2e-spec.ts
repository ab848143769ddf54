import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { Redlock } from '../../lib/index.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';
import { until } from '../support/until.js';
import { TEST_NODE_TIMEOUT } from '../support/timeouts.js';

let fleet: RedisFleet;

beforeAll(async () => {
  fleet = await startFleet(3);
});

afterAll(async () => {
  await fleet?.stop();
});

describe('the restart guard, when its INFO check fails', () => {
  it('checks again while connected, instead of keeping the node out of quorums until its next reconnect', async () => {
    // The application's client, whose first INFO fails as a server still loading its data would answer.
    const flaky = new Redis(fleet.urls[0]!);
    await new Promise((resolve) => flaky.once('ready', resolve));
    const info = flaky.info.bind(flaky);
    let failures = 0;
    (flaky as unknown as { info: (...args: unknown[]) => Promise<string> }).info = (...args: unknown[]) =>
      failures++ === 0 ? Promise.reject(new Error('LOADING Redis is loading the dataset in memory')) : info(...(args as []));
    const redlock = new Redlock({ nodes: [flaky, fleet.urls[1]!, fleet.urls[2]!], restartGuard: 1000, nodeTimeout: TEST_NODE_TIMEOUT });
    try {
      await redlock.ready();
      // Unverified at first (the failed check), then counted once a later check succeeded, with no reconnect between.
      await until(async () => (await redlock.ping())[0]!.status === 'up', 'node 0 counted again');
      expect(failures).toBeGreaterThanOrEqual(2);
      expect(flaky.status).toBe('ready');
    } finally {
      await redlock.close();
      flaky.disconnect();
    }
  });
});
