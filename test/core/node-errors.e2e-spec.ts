import { describe, expect, it } from '@jest/globals';
import { Redlock, type LockEvent } from '../../lib/index.js';
import { startFleet } from '../support/redis-fleet.js';
import { TEST_NODE_TIMEOUT } from '../support/timeouts.js';

describe("a node's error in what the client reports", () => {
  it("never echoes the command's arguments (a server without EVALSHA lists them, the lock's value among them)", async () => {
    // As managed servers that rename or disable commands: every acquisition is refused by the server.
    const fleet = await startFleet(3, { args: ['--rename-command', 'EVALSHA', '""'] });
    const redlock = new Redlock({ nodes: fleet.urls, nodeTimeout: TEST_NODE_TIMEOUT, retryCount: 0 });
    const events: LockEvent[] = [];
    redlock.subscribe((event) => events.push(event));
    try {
      const error = (await redlock.acquire('orders:1', 5000).catch((e: unknown) => e)) as Error & { code?: string };
      expect(error.code).toBe('QUORUM_UNREACHABLE');
      expect(error.message).toMatch(/unknown command/);
      const failed = events.find((e) => e.type === 'acquire-failed') as { reason?: string } | undefined;
      expect(failed?.reason).toMatch(/unknown command/);
      for (const text of [error.message, failed!.reason!]) {
        expect(text).not.toMatch(/args beginning with/);
        expect(text).not.toContain('redlock:lock:orders:1'); // an argument: the lock key, sent beside the value
      }
    } finally {
      await redlock.close();
      await fleet.stop();
    }
  });
});
