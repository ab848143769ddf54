import { describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { startFleet } from '../support/redis-fleet.js';
import { ACQUIRE, CONFIRM_TOKEN, EXTEND, FENCED_ACCESS, INSPECT, LEAVE_QUEUE, RELEASE, type Script } from '../../lib/core/scripts.js';
import { FORCE_RELEASE } from '../../lib/core/operator-scripts.js';
import { createHash } from 'node:crypto';
import { describeLockBehaviour, type PermitBackend } from './lock-behaviour.js';
import { describePermitBehaviour } from './permit-behaviour.js';
import { normalize, runBoth, seeded, snapshot, useRedisServer, type Side } from './differential.js';

// The same suite as memory.spec.ts, on three redis-server nodes: what the
// in-memory nodes of nest-redlock/testing promise is what Redis does.
const redisBackend = async (): Promise<PermitBackend> => {
  const fleet = await startFleet(3);
  const raw = fleet.urls.map((url) => new Redis(url));
  return {
    nodes: fleet.urls,
    // ioredis's overloads of ZRANGE are narrowed to the one the suite reads with.
    direct: raw.map((r) => ({
      evalsha: r.evalsha.bind(r),
      eval: r.eval.bind(r),
      zrange: (key: string, start: number, stop: number) => r.zrange(key, start, String(stop)),
      pttl: (key: string) => r.pttl(key),
    })),
    deleteKey: async (i, key) => void (await raw[i]!.del(key)),
    flush: async () => void (await Promise.all(raw.map((r) => r.flushall()))),
    stop: async () => {
      raw.forEach((r) => r.disconnect());
      await fleet.stop();
    },
  };
};

/** A holder's fingerprint as force-release matches it: the first 12 hex digits of the value's SHA-1. */
const fingerprint = (value: string) => createHash('sha1').update(value).digest('hex').slice(0, 12);

describeLockBehaviour('redis-server nodes', redisBackend);
describePermitBehaviour('redis-server nodes', redisBackend);

/**
 * Below the lock client: the same random sequence of script calls on a
 * redis-server and on a MemoryRedisNode must give the same replies, the same
 * PUBLISH messages and the same keys. Clock readings (fencing counters reborn
 * from TIME, queue deadlines) and remaining ttls differ by nature and are
 * compared by kind only.
 */
describe('MemoryRedisNode scripts answer like Redis', () => {
  const server = useRedisServer();

  const STEPS = Number(process.env.DIFF_STEPS ?? 400);
  const SEEDS = process.env.DIFF_SEEDS ? process.env.DIFF_SEEDS.split(',').map(Number) : [0x5eed, 7, 42];

  it.each(SEEDS)(`on ${STEPS} random calls of every mutex script (seed %i)`, async (initialSeed) => {
    // Waiters of two clients: a release wakes the first waiter on its client's channel. A
    // hand-over's message carries a fencing token: a clock reading where a counter was reborn.
    const { redis, memory, published, publishedAlike } = await server.fresh(
      ['d:wake:c1', 'd:wake:c2'],
      (c, m) => `${c} ${m.replace(/\b\d{12,}\b/g, 'clock')}`,
    );

    const { random, pick } = seeded(initialSeed);
    const subset = () => {
      const all = ['a', 'b', 'c'].filter(() => random() < 0.5);
      return all.length ? all : [pick(['a', 'b', 'c'])];
    };
    const values = ['v1', 'v2', 'v3'];
    const waiters = ['c1.w1', 'c1.w2', 'c2.w3', 'c2.w4'];
    const base = Date.now();
    const tokens = { redis: 0, memory: 0 };

    const run = (script: Script, keys: string[], args: (side: Side) => (string | number)[]) => runBoth(redis, memory, script, keys, args);

    const steps: string[] = [];
    for (let step = 0; step < STEPS; step++) {
      const resources = subset();
      const locks = resources.map((r) => `d:lock:${r}`);
      const fences = resources.map((r) => `d:fence:${r}`);
      const queues = resources.flatMap((r) => [`d:queue:${r}`, `d:queue-deadlines:${r}`]);
      const value = pick(values);
      const kind = pick([
        'acquire',
        'acquire',
        'acquire',
        'confirm',
        'extend',
        'release',
        'release',
        'leave',
        'inspect',
        'force',
        'fenced',
      ]);
      let result: { fromRedis: unknown; fromMemory: unknown };
      switch (kind) {
        case 'acquire': {
          const fencing = random() < 0.6;
          const fair = random() < 0.7;
          // First-attempt times from a small set: ties in the queue are ordered by waiter id.
          const waiter = fair ? pick([...waiters, '-']) : '';
          const spec = waiter === '' || waiter === '-' ? waiter : `${waiter} ${base + pick([0, 0, 1, 2])} 20000 ${pick([1, 2])}`;
          // The lock keys only, and the prefix's length ('d:') when the script must build the others.
          const layout = fencing ? [2, 60_000, (base + pick([0, 7])) * 1000] : fair ? [2] : [];
          const args = [value, pick([30_000, 100_000]), spec, ...layout];
          result = await run(ACQUIRE, locks, () => args);
          for (const side of ['redis', 'memory'] as const) {
            const reply = side === 'redis' ? result.fromRedis : result.fromMemory;
            if (Array.isArray(reply) && reply[0] === 1 && reply[1] > 0) tokens[side] = reply[1] as number;
          }
          break;
        }
        case 'confirm': {
          const above = pick([0, 1, 5]);
          result = await run(CONFIRM_TOKEN, [...locks, ...fences], (side) => [
            value,
            String(tokens[side] + above),
            resources.length,
            60_000,
          ]);
          break;
        }
        case 'extend': {
          const ttl = pick([30_000, 100_000]);
          result = await run(EXTEND, locks, () => [value, ttl]);
          break;
        }
        case 'release': {
          const fair = random() < 0.7;
          // A holder that had queued leaves the queues (absent or '': it never queued); an undo names its waiter.
          const leaving = pick([[], [''], ...waiters.map((w) => [w]), ['', pick(waiters)]]);
          result = await run(RELEASE, locks, () => (fair ? [value, 2, ...leaving] : [value]));
          break;
        }
        case 'leave': {
          const args = [pick(waiters), 'd:wake:'];
          result = await run(LEAVE_QUEUE, queues, () => args);
          break;
        }
        case 'force': {
          // An operator's force-release: of whoever holds it, of one holder (by fingerprint), or of nobody there.
          const r = resources[0]!;
          const holder = pick(['', fingerprint(pick(values)), '000000000000']);
          const fencing = random() < 0.6;
          const args = [holder, fencing ? (base + pick([0, 7])) * 1000 : '', fencing ? 60_000 : '', 'd:wake:'];
          result = await run(
            FORCE_RELEASE,
            [`d:lock:${r}`, `d:fence:${r}`, `d:queue:${r}`, `d:queue-deadlines:${r}`, `d:kind:${r}`],
            () => args,
          );
          break;
        }
        case 'inspect': {
          const r = resources[0]!;
          result = await run(INSPECT, [`d:lock:${r}`, `d:fence:${r}`, `d:queue:${r}`, `d:kind:${r}`], () => []);
          break;
        }
        default: {
          const r = resources[0]!;
          const op = pick(['get', 'set', 'del']);
          const args = op === 'set' ? [pick([1, 2, 3, 4]), op, pick(values)] : [pick([1, 2, 3, 4]), op];
          result = await run(FENCED_ACCESS, [`d:data:${r}`, `d:token:${r}`], () => args);
        }
      }
      steps.push(`${step} ${kind} ${resources.join(',')}`);
      expect({ step: steps.at(-1), reply: normalize(result.fromMemory) }).toEqual({
        step: steps.at(-1),
        reply: normalize(result.fromRedis),
      });
    }

    // The same keys, each with the same content (queue deadlines are clock readings).
    const [inRedis, inMemory] = await Promise.all([snapshot(redis, 'd:'), snapshot(memory, 'd:')]);
    expect(inMemory).toEqual(inRedis);
    expect(Object.keys(inRedis).some((k) => k.startsWith('d:queue:'))).toBe(true);
    await publishedAlike();
    expect(published.redis.length).toBeGreaterThan(0);
    // Hand-overs ('<channel> <waiter> <attempt> <token>') among them, not only wake-ups.
    expect(published.redis.some((m) => m.split(' ').length === 4)).toBe(true);
  });
});
