import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { inspect } from 'node:util';
import { MemoryFencedStore, RedisFencedStore, StaleTokenError, type FencedStore } from '../../lib/index.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';

let fleet: RedisFleet;
let storeClient: Redis;

beforeAll(async () => {
  // The stores themselves; fencing tokens from lock nodes: suites/fencing.ts.
  fleet = await startFleet(1);
  storeClient = new Redis(fleet.urls[0]!);
});

afterAll(async () => {
  storeClient?.disconnect();
  await fleet?.stop();
});

const stores: [string, () => FencedStore][] = [
  ['MemoryFencedStore', () => new MemoryFencedStore()],
  ['RedisFencedStore', () => new RedisFencedStore(storeClient, `t${Math.random()}:`)],
];

describe('RedisFencedStore rendered', () => {
  it("never shows the application's client (its options hold the password) to inspect or JSON", () => {
    const client = new Redis({ lazyConnect: true, username: 'locker', password: 's3cret' });
    const store = new RedisFencedStore(client);
    const shown = [
      inspect(store),
      inspect(store, { depth: Infinity, showHidden: true, getters: true }),
      JSON.stringify(store),
      String(store),
    ];
    for (const text of shown) expect(text).not.toMatch(/s3cret|locker/);
    client.disconnect();
  });
});

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
