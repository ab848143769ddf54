import { describe, expect, it } from '@jest/globals';
import { openIoredis, RECONNECT_MAX } from '../../lib/core/clients/ioredis.connection.js';
import { findFreePort } from '../support/redis-node.js';

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
