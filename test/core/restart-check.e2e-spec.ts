import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { Redlock, type LockEvent } from '../../lib/index.js';
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

describe('the restart guard, after a restart', () => {
  it('keeps the node out for its whole window, though its connection drops and comes back meanwhile (the same run id)', async () => {
    // The application's client of node 0, whose reconnects the test can watch.
    const app = new Redis(fleet.urls[0]!);
    app.on('error', () => undefined);
    const events: LockEvent[] = [];
    const redlock = new Redlock({
      nodes: [app, fleet.urls[1]!, fleet.urls[2]!],
      nodeTimeout: TEST_NODE_TIMEOUT,
      onEvent: (e) => events.push(e),
    });
    const raw = new Redis(fleet.urls[0]!);
    raw.on('error', () => undefined);
    try {
      await until(async () => (await redlock.ping()).every((n) => n.status === 'up'), 'every node verified');
      // The default guard ('auto') keeps a restarted node out for the longest ttl this client used.
      await (await redlock.acquire('long', 60_000)).release();
      await fleet.kill(0);
      await fleet.restart(0);
      await until(() => events.some((e) => e.type === 'node-restarted'), 'the restart seen');
      await until(async () => (await redlock.ping())[0]!.excluded === true, 'node 0 excluded');
      // A blip: the connection drops and comes back to the same server (a network hiccup, an idle timeout).
      const reconnected = new Promise((resolve) => app.once('ready', resolve));
      await raw.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
      await reconnected;
      // Its restart check ran on 'ready' (before this listener) and its INFO answered before this PING.
      expect((await redlock.ping())[0]).toMatchObject({ status: 'down', excluded: true });
    } finally {
      await redlock.close();
      app.disconnect();
      raw.disconnect();
    }
  });
});
