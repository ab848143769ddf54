/**
 * Nodes that are databases of one server (accepted: their keys are apart, though
 * they do not fail independently). Pub/sub ignores databases, so every node's
 * subscription hears a message published on any of them.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { Redlock, type RedlockOptions } from '../../lib/index.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';
import { until } from '../support/until.js';
import { handOverWaiter } from '../support/waiter.js';
import { TEST_NODE_TIMEOUT } from '../support/timeouts.js';

let fleet: RedisFleet;
let urls: string[];
/** One connection per database, behind the lock clients' back. */
let raw: Redis[];
const clients: Redlock[] = [];
const client = (options: Partial<RedlockOptions> = {}) => {
  const redlock = new Redlock({ nodes: urls, nodeTimeout: TEST_NODE_TIMEOUT, ...options });
  clients.push(redlock);
  return redlock;
};

beforeAll(async () => {
  fleet = await startFleet(1);
  urls = [0, 1, 2].map((db) => `${fleet.urls[0]}/${db}`);
  raw = [0, 1, 2].map((db) => new Redis(fleet.urls[0]!, { db }));
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  raw?.forEach((r) => r.disconnect());
  await fleet?.stop();
});

describe('nodes that are databases of one server', () => {
  it("do not count one database's hand-over, heard on every node's subscription, as a quorum", async () => {
    const holder = client();
    const { waiter, handedOver } = await handOverWaiter((options) => client({ ...options, nodeTimeout: 2000 }), { shortGrace: true });
    const held = await holder.acquire('shared', 10_000);
    const values = () => Promise.all(raw.map((r) => r.get('redlock:lock:shared')));
    await until(async () => (await values()).every((v) => v !== null), 'the holder on every database');
    const waiting = waiter.acquire('shared', 10_000);
    const queued = () => Promise.all(raw.map((r) => r.zcard('redlock:queue:shared')));
    await until(async () => (await queued()).every((n) => n === 1), 'the waiter queued on every database');
    // Databases 1 and 2 forget it: only database 0's release hands the lock over, and its message
    // reaches the waiter's three subscriptions, one per node.
    for (const r of raw.slice(1)) await r.del('redlock:queue:shared', 'redlock:queue-deadlines:shared', 'redlock:handover:shared');
    await held.release();
    const lock = await waiting;
    // Held on every database (an attempt took databases 1 and 2), not on database 0 alone.
    const [first, ...rest] = await values();
    expect(first).not.toBeNull();
    expect(rest).toEqual([first, first]);
    expect(handedOver).toEqual([false]);
    await lock.release();
  });
});
