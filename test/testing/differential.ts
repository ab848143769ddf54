/**
 * What the differential runs (real, permit-differential and slot-differential.e2e-spec.ts)
 * share: a seeded generator, one script call on a redis-server and on a
 * MemoryRedisNode side by side, and the comparison of replies and keys.
 */
import { afterAll, afterEach, beforeAll, expect } from '@jest/globals';
import { Redis } from 'ioredis';
import { runScript, type Script } from '../../lib/core/scripts.js';
import { MemoryRedisNode } from '../../lib/testing/index.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';
import { until } from '../support/until.js';

export type Side = 'redis' | 'memory';

/**
 * The redis-server side of a differential run, for the calling describe block: one
 * server started before its tests and stopped (by PID) after them, with a client and a
 * subscriber. Each run starts with `fresh`, after `beforeAll`.
 */
export function useRedisServer(): {
  fresh(channels: readonly string[], message: (channel: string, message: string) => string): Promise<DifferentialRun>;
} {
  let fleet: RedisFleet | undefined;
  let redis: Redis | undefined;
  let subscriber: Redis | undefined;
  let memorySubscriber: MemoryRedisNode | undefined;
  beforeAll(async () => {
    fleet = await startFleet(1);
    redis = new Redis(fleet.urls[0]!);
    subscriber = new Redis(fleet.urls[0]!);
  });
  // A failed run's in-memory subscriber too.
  afterEach(() => void memorySubscriber?.disconnect());
  afterAll(async () => {
    redis?.disconnect();
    subscriber?.disconnect();
    await fleet?.stop();
  });
  return {
    async fresh(channels, message) {
      await redis!.flushall();
      subscriber!.removeAllListeners('message');
      const memory = new MemoryRedisNode();
      memorySubscriber = memory.duplicate();
      const published: Record<Side, string[]> = { redis: [], memory: [] };
      subscriber!.on('message', (c: string, m: string) => published.redis.push(message(c, m)));
      memorySubscriber.on('message', (c: string, m: string) => published.memory.push(message(c, m)));
      await subscriber!.subscribe(...channels);
      await memorySubscriber.subscribe(...channels);
      return {
        redis: redis!,
        memory,
        published,
        async publishedAlike() {
          await until(() => published.memory.length === published.redis.length, 'the same number of wake-up messages', 2000);
          expect(published.memory).toEqual(published.redis);
        },
      };
    },
  };
}

/** One differential run's two sides, fresh. */
export interface DifferentialRun {
  readonly redis: Redis;
  readonly memory: MemoryRedisNode;
  /** What each side published on the run's channels, as its `message` rendered it. */
  readonly published: Readonly<Record<Side, string[]>>;
  /** Both sides published the same messages (waits for the later ones to arrive). */
  publishedAlike(): Promise<void>;
}

export interface Replies {
  readonly fromRedis: unknown;
  readonly fromMemory: unknown;
}

/** Numbers that are clock readings or ttls become their kind; small counts and codes stay. */
/**
 * An error reply by its code. KeyDB words an error raised inside a script as
 * `ERR Error running script ... WRONGTYPE ...`, where Redis and Valkey say
 * `WRONGTYPE ...`: the library looks for the code anywhere in the message, so
 * this does too.
 */
const errorCode = (e: Error) => `error ${/\b(WRONGTYPE|WRONGKIND|NOSCRIPT)\b/.exec(e.message)?.[1] ?? e.message.split(' ')[0]}`;

/** errorCode, with the use a WRONGKIND names ('mutex', 'rw', a semaphore's limit): the slot scripts' refusals differ only there. */
export const errorKind = (e: Error) => {
  const kind = /\bWRONGKIND (\S+)/.exec(e.message)?.[1];
  return kind === undefined ? errorCode(e) : `error WRONGKIND ${kind}`;
};

export const normalize = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(normalize);
  if (typeof value === 'string' && /^\d{12,}$/.test(value)) return 'clock';
  // A permit holder's mark in a queue's deadlines (see permit-scripts.ts).
  if (typeof value === 'string' && /^-\d{12,}$/.test(value)) return '-clock';
  if (typeof value === 'number' && value >= 1e12) return 'clock';
  if (typeof value === 'number' && value > 100) return 'ttl';
  return value;
};

/** mulberry32: a small seeded generator, so that a failure can be replayed; with pick over it. */
export function seeded(initialSeed: number): { random: () => number; pick: <T>(list: readonly T[]) => T } {
  let seed = initialSeed;
  const random = () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { random, pick: <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]! };
}

/** Runs one call on both; `args` (drawn before, not inside) may differ by side only in what each side issued. */
export async function runBoth(
  redis: Redis,
  memory: MemoryRedisNode,
  script: Script,
  keys: string[],
  args: (side: Side) => (string | number)[],
  describeError: (e: Error) => string = errorCode,
): Promise<Replies> {
  const [fromRedis, fromMemory] = await Promise.all([
    runScript(redis, script, keys, args('redis')).catch(describeError),
    runScript(memory, script, keys, args('memory')).catch(describeError),
  ]);
  return { fromRedis, fromMemory };
}

export interface SnapshotOptions {
  /**
   * Each key's remaining life too, coarsely (none or gone: the PTTL's -1 or -2;
   * 'short': 2 s or less; else in tens of seconds, rounded up): the scripts' ttls are multiples of
   * 10 s, so a run shorter than that reads the same on both sides.
   */
  readonly lives?: boolean;
  /** What a value goes through before it is compared (default `normalize`). */
  readonly normalize?: (value: unknown) => unknown;
}

/** Every key under `prefix` with its content (sorted-set members in order, scores left out: they are clock readings). */
export async function snapshot(
  client: Redis | MemoryRedisNode,
  prefix: string,
  options: SnapshotOptions = {},
): Promise<Record<string, unknown>> {
  const { lives = false, normalize: norm = normalize } = options;
  const read = async (key: string): Promise<unknown> => {
    const type = await client.type(key);
    return type === 'string'
      ? norm(await client.get(key))
      : type === 'zset'
        ? await (client as MemoryRedisNode).zrange(key, 0, -1) // the same signature on both
        : norm(Object.entries(await client.hgetall(key)).sort());
  };
  const life = async (key: string) => {
    const pttl = await client.pttl(key);
    return pttl < 0 ? pttl : pttl <= 2000 ? 'short' : Math.ceil(pttl / 10_000);
  };
  const keys = (await client.keys(`${prefix}*`)).sort();
  // All sent at once: one round trip's wait for the whole key space, not a few per key.
  const entries = await Promise.all(keys.map(async (key) => [key, lives ? await Promise.all([read(key), life(key)]) : await read(key)]));
  return Object.fromEntries(entries) as Record<string, unknown>;
}
