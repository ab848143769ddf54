/**
 * What the differential runs (real.e2e-spec.ts, permit-differential.e2e-spec.ts)
 * share: a seeded generator, one script call on a redis-server and on a
 * MemoryRedisNode side by side, and the comparison of replies and keys.
 */
import type { Redis } from 'ioredis';
import { runScript, type Script } from '../../lib/core/scripts.js';
import type { MemoryRedisNode } from '../../lib/testing/index.js';

export type Side = 'redis' | 'memory';

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
): Promise<Replies> {
  const [fromRedis, fromMemory] = await Promise.all([
    runScript(redis, script, keys, args('redis')).catch(errorCode),
    runScript(memory, script, keys, args('memory')).catch(errorCode),
  ]);
  return { fromRedis, fromMemory };
}

/** Every key under `prefix` with its content (sorted-set members in order, scores left out: they are clock readings). */
export async function snapshot(client: Redis | MemoryRedisNode, prefix: string): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const key of (await client.keys(`${prefix}*`)).sort()) {
    const type = await client.type(key);
    out[key] =
      type === 'string'
        ? normalize(await client.get(key))
        : type === 'zset'
          ? await (client as MemoryRedisNode).zrange(key, 0, -1) // the same signature on both
          : normalize(Object.entries(await client.hgetall(key)).sort());
  }
  return out;
}
