import { describe, expect, it } from '@jest/globals';
import { openIoredis, RECONNECT_MAX } from '../../lib/core/clients/ioredis.connection.js';
import { Redlock, type LockEvent, type NodeSpec } from '../../lib/index.js';
import { findFreePort } from '../support/redis-node.js';
import { startFleet } from '../support/redis-fleet.js';
import { otherIoredis, QUICK_CLOSE } from '../support/other-ioredis.js';
import { TEST_NODE_TIMEOUT } from '../support/timeouts.js';
import { until } from '../support/until.js';

describe('connections the client opens (issue 18.19)', () => {
  it(`reconnect to a node that is down at least every ${RECONNECT_MAX} ms, however long it has been down`, async () => {
    const port = await findFreePort(); // nothing listens: every connect is refused
    const client = openIoredis(`redis://127.0.0.1:${port}`);
    const delays: number[] = [];
    client.on('error', () => undefined);
    try {
      await new Promise<void>((resolve) => {
        client.on('reconnecting', (delay: number) => {
          delays.push(delay);
          if (delays.length === 12) resolve(); // ioredis's own back-off would be at 600 ms by now
        });
        client.connect().catch(() => undefined);
      });
    } finally {
      client.disconnect();
    }
    expect(Math.max(...delays)).toBeLessThanOrEqual(RECONNECT_MAX);
  });
});

describe('a node that stays down', () => {
  it('is reported once per error (a node-error each), not at every reconnect; anew once it was ready and fails again', async () => {
    const fleet = await startFleet(3);
    const Redis = await otherIoredis();
    // The application's client, so that the test sees each failed reconnect on it.
    const app = new Redis(fleet.urls[2]!, { retryStrategy: () => 50, ...QUICK_CLOSE });
    let failures = 0;
    app.on('error', () => failures++);
    const redlock = new Redlock({ nodes: [...fleet.urls.slice(0, 2), app as unknown as NodeSpec], nodeTimeout: TEST_NODE_TIMEOUT });
    const errors: LockEvent[] = [];
    redlock.subscribe((event) => event.type === 'node-error' && event.node.endsWith(`:${fleet.ports[2]}/0`) && errors.push(event));
    try {
      await (await redlock.acquire('job', 5000)).release();
      await fleet.kill(2);
      await until(() => failures >= 5, 'five failed reconnects');
      // Once per error: a SIGKILL's reset may come before the refused reconnects (two messages).
      const messages = () => errors.map((e) => (e as { message: string }).message);
      expect(new Set(messages()).size).toBe(errors.length);
      const first = errors.length;
      await fleet.restart(2);
      await until(() => app.status === 'ready', 'the node back');
      await fleet.kill(2);
      await until(() => failures >= 10, 'five more failed reconnects');
      expect(errors.length).toBeGreaterThan(first); // reported anew
      expect(new Set(messages().slice(first)).size).toBe(errors.length - first);
    } finally {
      await redlock.close();
      app.disconnect();
      await fleet.stop();
    }
  });
});
