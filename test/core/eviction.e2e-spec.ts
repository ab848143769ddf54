import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { Redlock, type LockEvent } from '../../lib/index.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';
import { until } from '../support/until.js';
import { evictionWarnings } from '../support/eviction.js';
import { TEST_NODE_TIMEOUT } from '../support/timeouts.js';

let fleet: RedisFleet;
let admins: Redis[];

beforeAll(async () => {
  fleet = await startFleet(3);
  admins = fleet.urls.map((url) => new Redis(url));
  // Node 0 as several managed services ship: a memory limit with volatile-lru.
  // Node 1 has a policy that evicts, but no limit: nothing is ever evicted.
  // Node 2 has a limit and refuses writes when full instead.
  await Promise.all([
    admins[0]!.config('SET', 'maxmemory', '64mb').then(() => admins[0]!.config('SET', 'maxmemory-policy', 'volatile-lru')),
    admins[1]!.config('SET', 'maxmemory', '0').then(() => admins[1]!.config('SET', 'maxmemory-policy', 'allkeys-lru')),
    admins[2]!.config('SET', 'maxmemory', '64mb').then(() => admins[2]!.config('SET', 'maxmemory-policy', 'noeviction')),
  ]);
});

afterAll(async () => {
  admins?.forEach((admin) => admin.disconnect());
  await fleet?.stop();
});

describe('a node that may evict lock keys', () => {
  it('is named in a node-error at connection, with its policy and what to set; nodes that cannot evict are not', async () => {
    const events: LockEvent[] = [];
    const redlock = new Redlock({ nodes: fleet.urls, retryCount: 0, nodeTimeout: TEST_NODE_TIMEOUT, onEvent: (e) => events.push(e) });
    try {
      await redlock.ready();
      await until(() => evictionWarnings(events).length > 0, 'the eviction warning');
      // A PING on each connection is answered after the INFO sent at its 'ready': every node was read by then.
      await redlock.ping();
      const warnings = evictionWarnings(events);
      expect(warnings).toHaveLength(1);
      expect(warnings[0]!.node).toBe(redlock.nodeLabels[0]);
      expect(warnings[0]!.message).toMatch(/maxmemory-policy volatile-lru, maxmemory 67108864 bytes/);
      expect(warnings[0]!.message).toMatch(/set maxmemory-policy noeviction/i);
      // The node is the event's `node`, which the logger puts before the message: not said twice.
      expect(warnings[0]!.message).not.toContain(warnings[0]!.node);
    } finally {
      await redlock.close();
    }
  });

  it('is said again after a reconnect only when its setting changed', async () => {
    const events: LockEvent[] = [];
    const redlock = new Redlock({ nodes: fleet.urls, retryCount: 0, nodeTimeout: TEST_NODE_TIMEOUT, onEvent: (e) => events.push(e) });
    try {
      await redlock.ready();
      await until(() => evictionWarnings(events).length === 1, 'the first warning');
      // The same setting across a reconnect: nothing new. The server closed the old connection,
      // so a PONG comes on the new one, after the INFO sent at its 'ready': read by then.
      await admins[0]!.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
      await until(async () => (await redlock.ping())[0]!.status === 'up', 'node 0 back');
      expect(evictionWarnings(events)).toHaveLength(1);
      // Another policy, read at the next connection: said.
      await admins[0]!.config('SET', 'maxmemory-policy', 'allkeys-lru');
      await admins[0]!.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
      await until(() => evictionWarnings(events).length === 2, 'the warning for the new policy');
      expect(evictionWarnings(events)[1]!.message).toMatch(/maxmemory-policy allkeys-lru/);
    } finally {
      await admins[0]!.config('SET', 'maxmemory-policy', 'volatile-lru');
      await redlock.close();
    }
  });
});
