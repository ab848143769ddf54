import { describe, expect, it } from '@jest/globals';
import { setTimeout as sleep } from 'node:timers/promises';
import { fingerprint } from '../../lib/core/inspection.js';
import { FORCE_RELEASE, INSPECT } from '../../lib/core/operator-scripts.js';
import { ACQUIRE, RELEASE } from '../../lib/core/scripts.js';
import { PERMIT_ACQUIRE, PERMIT_CONFIRM, PERMIT_EXTEND, PERMIT_RELEASE } from '../../lib/core/permit-scripts.js';
import { normalize, runBoth, seeded, snapshot, useRedisServer, type Replies } from './differential.js';

/**
 * The permit scripts' drift guard, as real.e2e-spec.ts's for the mutex's: the
 * same random sequence of permit calls on a redis-server and on a
 * MemoryRedisNode must give the same replies, PUBLISH messages and keys.
 * Read-write locks, writers, queued waiters, kind mismatches (a set an earlier
 * version's semaphore left, of kind '3'), a mutex taking and releasing a permit's key, holders marked in the queues,
 * undone waiters queued again, permits and queue entries that run out (1 ms, followed by a
 * pause both clocks pass), and the operators' INSPECT and FORCE_RELEASE (of the only
 * holder, of one named, of nobody there) are all drawn.
 */
/**
 * INSPECT's holders by fingerprint: it lists them in expiry order, which two permits taken
 * within one millisecond on one side and not on the other swap.
 */
function byHolder(reply: unknown): unknown {
  if (!Array.isArray(reply) || !Array.isArray(reply[3])) return reply;
  const flat = reply[3] as unknown[];
  const quads = Array.from({ length: flat.length / 4 }, (_, i) => flat.slice(4 * i, 4 * i + 4));
  quads.sort((a, b) => String(a[0]).localeCompare(String(b[0])));
  return [...reply.slice(0, 3), quads.flat()];
}

describe('MemoryRedisNode permit scripts answer like Redis', () => {
  const server = useRedisServer();

  const STEPS = Number(process.env.DIFF_STEPS ?? 400);
  const SEEDS = process.env.DIFF_SEEDS ? process.env.DIFF_SEEDS.split(',').map(Number) : [7, 42, 4]; // seed 1 stopped drawing 'force -2' when admitted waiters began to keep their places; seed 3 drew no hand-over once releases began to hand permits over

  it.each(SEEDS)(`on ${STEPS} random calls of every permit script (seed %i)`, async (initialSeed) => {
    // A hand-over's message carries a fencing token: a clock reading where a counter was reborn.
    const { redis, memory, published, publishedAlike } = await server.fresh(
      ['p:wake:c1', 'p:wake:c2'],
      (c, m) => `${c} ${m.replace(/\b\d{12,}\b/g, 'clock')}`,
    );

    const { random, pick } = seeded(initialSeed);
    // Two with an identity part (after the first '.'), which INSPECT and FORCE_RELEASE return without the random part.
    const members = ['v1', 'v2', 'v3.eyJhcHAiOiJhIn0', 'v4', 'v5:w', 'v6.eyJhcHAiOiJiIn0:w'];
    const waiters = ['c1.w1', 'c1.w2:w', 'c2.w3', 'c2.w4:w', 'c2.w5'];
    const base = Date.now();
    const tokens = { redis: 0, memory: 0 };
    const outcomes = new Set<string>();
    const held: string[] = [];
    const run = (script: Parameters<typeof runBoth>[2], keys: string[], args: Parameters<typeof runBoth>[4]) =>
      runBoth(redis, memory, script, keys, args);

    for (let step = 0; step < STEPS; step++) {
      const op = pick([
        'acquire',
        'acquire',
        'acquire',
        'confirm',
        'extend',
        'release',
        'release',
        'mutex',
        'mutex',
        'inspect',
        'force',
        'force',
      ]);
      // A mutex takes and gives back 'd' now and then: a permit meets its string, or the mutex meets the permits' set.
      const r = op === 'mutex' ? 'd' : pick(['a', 'a', 'b', 'b', 'c', 'd']);
      const [holders, kindKey, fence] = [`p:lock:${r}`, `p:kind:${r}`, `p:fence:${r}`];
      const queues = [`p:queue:${r}`, `p:queue-deadlines:${r}`];
      // Calls on a permit mostly name one that was taken (it may have run out or been released since).
      const taken = held.filter((h) => h.startsWith(`${r} `));
      const member = op !== 'acquire' && taken.length && random() < 0.7 ? pick(taken).slice(2) : pick(members);
      // Now and then the kind an earlier version's semaphore stored (limit 3, counted permits): a mismatch.
      const kind = random() < 0.9 ? 'rw' : '3';
      // Now and then a permit or a queue entry of 1 ms: the pause after the step lets both clocks pass it.
      const short = random() < 0.08;
      let result: Replies;
      switch (op) {
        case 'acquire': {
          const fencing = random() < 0.6;
          const fair = random() < 0.8;
          const waiter = fair ? pick([...waiters, '-']) : '';
          const entryTtl = short && random() < 0.5 ? 1 : 20_000;
          // A place near the clock now, not the run's start: both sides clamp a place over a second old to their own clock,
          // and a run that outlasts a second on a loaded machine would then order the same waiters differently.
          const since = Date.now() + pick([0, 0, 1, 2]);
          const spec = waiter === '' || waiter === '-' ? waiter : `${waiter} ${since} ${entryTtl} ${pick([1, 2])}`;
          // The semaphore's marker (a semaphore's slots, see slot-scripts.ts) third: never set here, so never a mismatch.
          const keys = [holders, kindKey, ...(fencing ? [fence] : []), ...(fair ? [...queues, `p:handover:${r}`] : [])];
          const ttl = short ? 1 : pick([30_000, 100_000]);
          const args = [member, ttl, kind, spec, ...(fencing ? [60_000, (base + pick([0, 7])) * 1000] : [])];
          result = await run(PERMIT_ACQUIRE, keys, () => args);
          for (const side of ['redis', 'memory'] as const) {
            const reply = side === 'redis' ? result.fromRedis : result.fromMemory;
            if (Array.isArray(reply) && reply[0] === 1 && reply[1] > 0) tokens[side] = reply[1] as number;
          }
          if (Array.isArray(result.fromRedis) && result.fromRedis[0] === 1) held.push(`${r} ${member}`);
          break;
        }
        case 'confirm': {
          const above = pick([-1, 0, 1, 5]);
          result = await run(PERMIT_CONFIRM, [holders, fence], (side) => [member, String(tokens[side] + above), 60_000]);
          break;
        }
        case 'extend': {
          const ttl = short ? 1 : pick([30_000, 100_000]);
          result = await run(PERMIT_EXTEND, [holders, kindKey], () => [member, ttl, kind]);
          break;
        }
        case 'release': {
          const fair = random() < 0.8;
          const giveBack = random() < 0.85 ? member : '';
          const entryTtl = short ? 1 : 20_000;
          const args = fair ? [giveBack, kind, 'p:wake:', pick(['', ...waiters]), pick(['', '', ...waiters]), entryTtl] : [giveBack, kind];
          // A release hands permits over: it is sent the kind key, and the counter with fencing on.
          const keys = fair ? [holders, ...queues, `p:handover:${r}`, kindKey, ...(random() < 0.6 ? [fence] : [])] : [holders];
          result = await run(PERMIT_RELEASE, keys, () => args);
          break;
        }
        case 'inspect': {
          const replies = await run(INSPECT, [holders, fence, queues[0]!, kindKey, queues[1]!], () => []);
          result = { fromRedis: byHolder(replies.fromRedis), fromMemory: byHolder(replies.fromMemory) };
          break;
        }
        case 'force': {
          // An operator evicts: the only holder (unnamed), one holder by its fingerprint (a writer's without ':w'), or nobody there.
          const holder = pick(['', fingerprint(member.replace(/:w$/, '')), '000000000000']);
          const fencing = random() < 0.6;
          const args = [holder, fencing ? (base + pick([0, 7])) * 1000 : '', fencing ? 60_000 : '', 'p:wake:'];
          result = await run(FORCE_RELEASE, [holders, fence, ...queues, kindKey], () => args);
          break;
        }
        default: {
          const take = random() < 0.6;
          result = take
            ? await run(ACQUIRE, [holders], () => ['mutex-value', short ? 1 : 30_000, ''])
            : await run(RELEASE, [holders], () => ['mutex-value']);
        }
      }
      const label = `${step} ${op} ${r} ${kind} ${member}${short ? ' short' : ''}`;
      expect({ step: label, reply: normalize(result.fromMemory) }).toEqual({ step: label, reply: normalize(result.fromRedis) });
      outcomes.add(`${op} ${JSON.stringify(normalize(result.fromRedis))}`);
      // The operators' calls by outcome (-2..1) and by kind found ('mutex', 'rw', none).
      if ((op === 'force' || op === 'inspect') && Array.isArray(result.fromRedis))
        outcomes.add(`${op} ${op === 'force' ? result.fromRedis[0] : result.fromRedis[0] === null ? 'none' : result.fromRedis[0]}`);
      if (process.env.DIFF_TRACE) console.log(label, JSON.stringify(result));
      // A release may hand over a permit with the 1 ms ttl a short acquire left in its hand-over: let it expire on both sides too.
      if (short || op === 'release') await sleep(5);
      // The queues now and then, not only at the end: holders' marks come and go. (Only the queues: holders are
      // ordered by expiry, which two permits taken in one millisecond on one side and not the other may swap.)
      if (step % 20 === 19) {
        const [inRedis, inMemory] = await Promise.all([snapshot(redis, 'p:queue'), snapshot(memory, 'p:queue')]);
        expect({ step: label, keys: inMemory }).toEqual({ step: label, keys: inRedis });
        if (JSON.stringify(inRedis).includes('-clock')) outcomes.add('queue mark');
      }
    }

    const [inRedis, inMemory] = await Promise.all([snapshot(redis, 'p:'), snapshot(memory, 'p:')]);
    expect(inMemory).toEqual(inRedis);
    await publishedAlike();
    expect(published.redis.length).toBeGreaterThan(0);
    // Hand-overs ('<channel> <waiter> <attempt> <token>') among them, not only wake-ups.
    expect(published.redis.some((m) => m.split(' ').length === 4)).toBe(true);
    // The run met what it is meant to compare (a seed of DIFF_SEEDS that misses one is a poor seed, not a drift): permits taken (fenced or not) and refused, both mismatches, lost permits, holders' marks in the queues, every operator outcome.
    const wanted = [
      'acquire [1,"clock"]',
      'acquire [1,0]',
      'acquire [0,-1]',
      'acquire "error WRONGKIND"',
      'acquire "error WRONGTYPE"',
      'extend 0',
      'extend 1',
      'confirm 0',
      'confirm 1',
      'release 0',
      'release 1',
      'mutex "error WRONGTYPE"',
      'mutex [1,0]',
      'force 1',
      'force 0',
      'force -1',
      'force -2',
      // (Their mutex branch is drawn here now and then; the mutex drift guard, real.e2e-spec.ts, runs it at every seed.)
      'inspect rw',
      'inspect none',
      'queue mark',
    ];
    // The ones missed, by name (a poor seed says which outcome it lacks).
    expect(wanted.filter((o) => !outcomes.has(o))).toEqual([]);
  });
});
