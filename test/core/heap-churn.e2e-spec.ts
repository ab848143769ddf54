import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Redlock } from '../../lib/index.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';
import { TEST_NODE_TIMEOUT } from '../support/timeouts.js';

// What an application's heap keeps of its locks. The client's long-lived collections (a
// node's commands in flight, the calls under way, the held locks) change at every call.
// Kept in Maps and Sets, each rebuilt table stayed linked from the one before it; once one
// of them was in the old generation, the minor GCs promoted every later table and what it
// held, garbage that only a full GC of the application's whole heap frees: ~8 KB per lock
// with 8 callers in a plain Node process (`node --trace-gc-nvp`: `promoted=`), against a
// few hundred bytes since.

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as (options?: { type: 'minor' | 'major' }) => void;
const oldSpace = () => getHeapSpaceStatistics().find((s) => s.space_name === 'old_space')!.space_used_size;

const CALLERS = 8;
const CYCLES = 400;

let fleet: RedisFleet;
let redlock: Redlock;
let raw: Redis[];

beforeAll(async () => {
  fleet = await startFleet(5);
  redlock = new Redlock({ nodes: fleet.urls, retryCount: 0, nodeTimeout: TEST_NODE_TIMEOUT });
  raw = fleet.urls.map((url) => new Redis(url));
});

afterAll(async () => {
  await redlock?.close();
  raw?.forEach((client) => client.disconnect());
  await fleet?.stop();
});

/** `cycles` acquire + release cycles over CALLERS concurrent callers, on distinct resources. */
async function locking(cycles: number): Promise<void> {
  let n = 0;
  await Promise.all(
    Array.from({ length: CALLERS }, async () => {
      for (let i = 0; i < cycles / CALLERS; i++) await (await redlock.acquire(`churn:${n++ % 64}`, 10_000)).release();
    }),
  );
}

const DEL = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";

/** The same cycles as a raw round over ioredis clients: SET NX PX on every node, then a compare-and-delete. */
async function rawRounds(cycles: number): Promise<void> {
  let n = 0;
  await Promise.all(
    Array.from({ length: CALLERS }, async () => {
      for (let i = 0; i < cycles / CALLERS; i++) {
        const key = `churn-raw:${n++ % 64}`;
        await Promise.all(raw.map((client) => client.set(key, 'v', 'PX', 10_000, 'NX')));
        await Promise.all(raw.map((client) => client.eval(DEL, 1, key, 'v')));
      }
    }),
  );
}

/** Bytes the old generation grew by, per cycle, from a full GC to two minor GCs after `cycles` finished cycles. */
async function promotedPerCycle(run: (cycles: number) => Promise<void>): Promise<number> {
  gc(); // a full GC: nothing dead is left in the old generation to hold young objects
  const before = oldSpace();
  await run(CYCLES);
  // Every call has finished: two minor GCs promote only what something still reaches.
  gc({ type: 'minor' });
  gc({ type: 'minor' });
  return (oldSpace() - before) / CYCLES;
}

const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

describe('the heap after locks', () => {
  it('keeps no more of finished lock calls for the old generation than a raw round over ioredis does', async () => {
    // The code compiled, the collections at their working size.
    await locking(2000);
    await rawRounds(2000);
    const lib: number[] = [];
    const floor: number[] = [];
    for (let round = 0; round < 3; round++) {
      lib.push(await promotedPerCycle(locking));
      floor.push(await promotedPerCycle(rawRounds));
    }
    // Under Jest, whose module sandbox makes any promise-heavy code promote some (~4 KB per
    // raw cycle here, against ~0 in a plain process), the library promoted 12-13 KB per
    // cycle with the Maps and Sets, and now about what the raw round does (1.1-1.2x).
    expect(median(lib)).toBeLessThan(2 * median(floor));
  });
});
