import { afterAll, afterEach, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { Redis } from 'ioredis';
import { Redlock } from '../../lib/index.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';
import { until } from '../support/until.js';
import { TEST_NODE_TIMEOUT } from '../support/timeouts.js';

// How long a resource's fencing counter outlives its last lock, and why that
// bounds the clock skew the tokens survive (README, "Fencing tokens", "Bounded state").

const DAY = 24 * 3600 * 1000;
let fleet: RedisFleet;
let raw: Redis[];
const clients: Redlock[] = [];

function client(options: Partial<ConstructorParameters<typeof Redlock>[0]> = {}): Redlock {
  const redlock = new Redlock({ nodes: fleet.urls, retryCount: 0, nodeTimeout: TEST_NODE_TIMEOUT, ...options });
  clients.push(redlock);
  return redlock;
}

/** The fencing token of one acquisition of `resource` made while this process's clock reads `aheadBy` ms ahead. */
async function tokenWithClockAhead(redlock: Redlock, resource: string, aheadBy: number): Promise<number> {
  const now = Date.now.bind(Date);
  const clock = jest.spyOn(Date, 'now').mockImplementation(() => now() + aheadBy);
  try {
    const lock = await redlock.acquire(resource, 5000);
    await lock.release();
    return lock.fencingToken!;
  } finally {
    clock.mockRestore();
  }
}

/** Resolves once no node has `key` (lookups expire a key whose time is up). */
const expired = (key: string) =>
  until(async () => (await Promise.all(raw.map((r) => r.exists(key)))).every((n) => n === 0), `${key} expired on every node`, 10_000);

beforeAll(async () => {
  fleet = await startFleet(3);
  raw = fleet.urls.map((url) => new Redis(url));
});

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  await Promise.all(raw.map((r) => r.flushall()));
});

afterAll(async () => {
  raw?.forEach((r) => r.disconnect());
  await fleet?.stop();
});

describe('fencing counter retention', () => {
  it('keeps a resource counter 24 hours after its last lock by default', async () => {
    const lock = await client().acquire('order:1', 5000);
    await lock.release();
    for (const pttl of await Promise.all(raw.map((r) => r.pttl('redlock:fence:order:1')))) {
      expect(pttl).toBeLessThanOrEqual(DAY);
      expect(pttl).toBeGreaterThan(DAY - 60_000);
    }
  });

  it('a counter reborn after the retention is above the tokens of a clock that was ahead by less than the retention', async () => {
    // Retention 1 s; the last token came from a clock 0.5 s ahead. The counter
    // expires 1 s after that acquisition, so the next one reads a clock at least
    // 1 s later: its floor, where the counter is reborn, is above the old token.
    const redlock = client({ fencingRetention: 1000 });
    const old = await tokenWithClockAhead(redlock, 'order:2', 500);
    await expired('redlock:fence:order:2');
    const lock = await redlock.acquire('order:2', 5000);
    expect(lock.fencingToken!).toBeGreaterThan(old);
    await lock.release();
  });

  it('and below them when that clock was ahead by more than the retention: the skew the retention must cover', async () => {
    const redlock = client({ fencingRetention: 1000 });
    const old = await tokenWithClockAhead(redlock, 'order:3', 3600 * 1000);
    await expired('redlock:fence:order:3');
    const lock = await redlock.acquire('order:3', 5000);
    expect(lock.fencingToken!).toBeLessThan(old);
    await lock.release();
  });
});
