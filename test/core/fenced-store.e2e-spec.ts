import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { MemoryFencedStore, Redlock, RedisFencedStore, StaleTokenError, type FencedStore } from '../../lib/index.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';
import { until } from '../support/until.js';
import { TEST_NODE_TIMEOUT } from '../support/timeouts.js';

let fleet: RedisFleet;
let storeClient: Redis;

beforeAll(async () => {
  // Nodes 0-2 are lock nodes; node 3 is the protected resource's own store.
  fleet = await startFleet(4);
  storeClient = new Redis(fleet.urls[3]!);
});

afterAll(async () => {
  storeClient?.disconnect();
  await fleet?.stop();
});

const stores: [string, () => FencedStore][] = [
  ['MemoryFencedStore', () => new MemoryFencedStore()],
  ['RedisFencedStore', () => new RedisFencedStore(storeClient, `t${Math.random()}:`)],
];

describe.each(stores)('%s', (_name, make) => {
  it('accepts equal and growing tokens', async () => {
    const store = make();
    await store.set('k', 'a', 10);
    await store.set('k', 'b', 10);
    expect(await store.get('k', 11)).toBe('b');
    await store.set('k', 'c', 12);
    expect(await store.get('k', 12)).toBe('c');
  });

  it('refuses a write with an older token, saying the highest seen', async () => {
    const store = make();
    await store.set('k', 'new', 20);
    const error = await store.set('k', 'stale', 19).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StaleTokenError);
    expect(error).toMatchObject({ code: 'STALE_TOKEN', key: 'k', token: 19, highest: 20 });
    expect(await store.get('k', 20)).toBe('new');
  });

  it('records reads too: after a newer holder read, an older holder cannot write', async () => {
    const store = make();
    await store.set('k', 'v1', 1);
    expect(await store.get('k', 2)).toBe('v1'); // the new holder reads
    await expect(store.set('k', 'from-old-holder', 1)).rejects.toBeInstanceOf(StaleTokenError);
    await expect(store.delete('k', 1)).rejects.toBeInstanceOf(StaleTokenError);
    await store.delete('k', 2);
    expect(await store.get('k', 2)).toBeNull();
  });
});

describe('fencing tokens with a fenced store', () => {
  it('reject the writes of a holder whose lock ran out while it was paused', async () => {
    const redlock = new Redlock({ nodes: fleet.urls.slice(0, 3), retryCount: 100, retryDelay: 20 });
    const store = new RedisFencedStore(storeClient, 'paused:');
    try {
      const slow = await redlock.acquire('account', 200);
      await store.set('balance', '100', slow.fencingToken!);
      // The slow holder "pauses" past its ttl; another holder takes over and writes.
      await until(() => !slow.isHeld, 'the slow lock to run out', 1000);
      const next = await redlock.acquire('account', 5000);
      expect(next.fencingToken!).toBeGreaterThan(slow.fencingToken!);
      await store.set('balance', '150', next.fencingToken!);
      // The slow holder wakes up and writes what it computed before its pause.
      await expect(store.set('balance', '90', slow.fencingToken!)).rejects.toBeInstanceOf(StaleTokenError);
      expect(await store.get('balance', next.fencingToken!)).toBe('150');
      await next.release();
    } finally {
      await redlock.close();
    }
  });

  it('refuse the writes of a holder an operator force-released, from the moment the store saw the returned token', async () => {
    const redlock = new Redlock({ nodes: fleet.urls.slice(0, 3), nodeTimeout: TEST_NODE_TIMEOUT });
    const operator = new Redlock({ nodes: fleet.urls.slice(0, 3), nodeTimeout: TEST_NODE_TIMEOUT });
    const store = new RedisFencedStore(storeClient, 'evicted:');
    try {
      const stuck = await redlock.acquire('ledger', 30_000);
      await store.set('ledger', 'v1', stuck.fencingToken!);
      const { fencingToken } = await operator.forceRelease('ledger');
      // The operator fences the store before anyone takes the lock again.
      expect(await store.get('ledger', fencingToken!)).toBe('v1');
      await expect(store.set('ledger', 'from-the-evicted-holder', stuck.fencingToken!)).rejects.toBeInstanceOf(StaleTokenError);
      // The next holder's token is above the operator's: its writes pass.
      const next = await operator.acquire('ledger', 5000);
      expect(next.fencingToken!).toBeGreaterThan(fencingToken!);
      await store.set('ledger', 'v2', next.fencingToken!);
      await expect(stuck.extend()).rejects.toMatchObject({ code: 'LOCK_LOST', reason: 'keys-gone' });
      await next.release();
    } finally {
      await Promise.all([redlock.close(), operator.close()]);
    }
  });
});
