import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { until } from '../support/until.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';
import { ACQUIRE, runScript, SET_NX, type Script } from '../../lib/core/scripts.js';
import { MemoryRedisNode } from '../../lib/testing/index.js';
import { describeLockBehaviour } from './lock-behaviour.js';
import { CallDrawer, KINDS, seeded, WAKE_CHANNELS, type Command, type Side } from './script-calls.js';

// The same suite as memory.spec.ts, on three redis-server nodes: what the
// in-memory nodes of nest-redlock/testing promise is what Redis does.
describeLockBehaviour('redis-server nodes', async () => {
  const fleet = await startFleet(3);
  const raw = fleet.urls.map((url) => new Redis(url));
  return {
    nodes: fleet.urls,
    deleteKey: async (i, key) => void (await raw[i]!.del(key)),
    flush: async () => void (await Promise.all(raw.map((r) => r.flushall()))),
    stop: async () => {
      raw.forEach((r) => r.disconnect());
      await fleet.stop();
    },
  };
});

/**
 * Below the lock client: the same random sequence of calls of every script
 * (and of the plain protocol's SET NX) on a redis-server and on a
 * MemoryRedisNode must give the same replies, the same keys after every step
 * and the same PUBLISH messages. Clock readings (fencing counters reborn from
 * TIME, queue deadlines) and remaining ttls differ by nature and are compared
 * by kind only.
 */
describe('MemoryRedisNode scripts answer like Redis', () => {
  let fleet: RedisFleet;
  let redis: Redis;
  let redisSubscriber: Redis;

  beforeAll(async () => {
    fleet = await startFleet(1);
    redis = new Redis(fleet.urls[0]!);
    redisSubscriber = new Redis(fleet.urls[0]!);
  });
  afterAll(async () => {
    redis?.disconnect();
    redisSubscriber?.disconnect();
    await fleet?.stop();
  });

  /** Numbers that are clock readings or ttls become their kind; small counts and codes stay. */
  const normalize = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(normalize);
    if (typeof value === 'string' && /^\d{12,}$/.test(value)) return 'clock';
    if (typeof value === 'number' && value >= 1e12) return 'clock';
    if (typeof value === 'number' && value > 100) return 'ttl';
    return value;
  };
  const failure = (e: Error) => `error ${e.message.split(' ')[0]}`;

  const send = (client: Redis | MemoryRedisNode, { script, keys, args }: Command, side: Side): Promise<unknown> => {
    if (script === SET_NX) return (client as Redis).set(keys[0]!, args(side)[0]!, 'PX', args(side)[1]!, 'NX'); // the same signature on both
    return runScript(client, script as Script, keys, args(side));
  };

  /** A step's commands, run one after the other with nothing between them (a MULTI on Redis); their replies. */
  const runOn = async (side: Side, client: Redis | MemoryRedisNode, commands: readonly Command[]): Promise<unknown[]> => {
    if (commands.length === 1) return [await send(client, commands[0]!, side).catch(failure)];
    if (side === 'memory') return Promise.all(commands.map((c) => send(client, c, side).catch(failure)));
    const multi = (client as Redis).multi();
    for (const { script, keys, args } of commands) multi.eval((script as Script).lua, keys.length, ...keys, ...args(side));
    const replies = (await multi.exec()) ?? [];
    return replies.map(([error, reply]) => (error ? failure(error) : reply));
  };

  /** Every key with its type, content and whether it expires (queue deadlines are clock readings). */
  const snapshot = async (client: Redis | MemoryRedisNode) => {
    const out: Record<string, unknown> = {};
    for (const key of (await client.keys('d:*')).sort()) {
      const [type, pttl] = await Promise.all([client.type(key), client.pttl(key)]);
      const content =
        type === 'string'
          ? normalize(await client.get(key))
          : type === 'zset'
            ? await (client as MemoryRedisNode).zrange(key, 0, -1) // the same signature on both
            : normalize(Object.entries(await client.hgetall(key)).sort());
      out[key] = { type, content, expires: pttl >= 0 ? 'yes' : pttl };
    }
    return out;
  };

  const STEPS = Number(process.env.DIFF_STEPS ?? 400);
  const SEEDS = process.env.DIFF_SEEDS ? process.env.DIFF_SEEDS.split(',').map(Number) : [0x5eed, 7, 42];

  it.each(SEEDS)(`on ${STEPS} random calls of every script (seed %i)`, async (seed) => {
    await redis.flushall();
    redisSubscriber.removeAllListeners('message');
    const memory = new MemoryRedisNode();
    const memorySubscriber = memory.duplicate();
    const published: Record<Side, string[]> = { redis: [], memory: [] };
    redisSubscriber.on('message', (c: string, m: string) => published.redis.push(`${c} ${m}`));
    memorySubscriber.on('message', (c: string, m: string) => published.memory.push(`${c} ${m}`));
    await redisSubscriber.subscribe(...WAKE_CHANNELS);
    await memorySubscriber.subscribe(...WAKE_CHANNELS);

    const drawer = new CallDrawer(seeded(seed));
    const kinds = new Set<string>();
    let queued = 0; // steps after which some queue existed
    for (let step = 0; step < STEPS; step++) {
      const call = drawer.draw(step);
      const [fromRedis, fromMemory] = await Promise.all([runOn('redis', redis, call.commands), runOn('memory', memory, call.commands)]);
      if (call.settle) await new Promise((resolve) => setTimeout(resolve, call.settle));
      call.commands.forEach(({ script }, i) => {
        for (const [side, replies] of [['redis', fromRedis], ['memory', fromMemory]] as const) {
          const reply = replies[i];
          if (script === ACQUIRE && Array.isArray(reply) && reply[0] === 1 && reply[1] > 0) drawer.tokens[side] = reply[1] as number;
        }
      });
      kinds.add(call.kind);
      const where = `${step} ${call.kind} ${call.resources.join(',')}`;
      expect({ where, replies: normalize(fromMemory) }).toEqual({ where, replies: normalize(fromRedis) });
      const [inRedis, inMemory] = await Promise.all([snapshot(redis), snapshot(memory)]);
      expect({ where, keys: inMemory }).toEqual({ where, keys: inRedis });
      if (Object.keys(inRedis).some((k) => k.startsWith('d:queue:'))) queued++;
    }

    expect([...kinds].sort()).toEqual([...new Set(KINDS)].sort());
    expect(queued).toBeGreaterThan(STEPS / 4);
    await until(() => published.memory.length === published.redis.length, 'the same number of wake-up messages', 2000);
    expect(published.memory).toEqual(published.redis);
    expect(published.redis.length).toBeGreaterThan(0);
    memorySubscriber.disconnect();
  });
});
