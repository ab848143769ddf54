import { describe, expect, it } from '@jest/globals';
import { setTimeout as sleep } from 'node:timers/promises';
import { fingerprint } from '../../lib/core/inspection.js';
import { FORCE_RELEASE, INSPECT } from '../../lib/core/operator-scripts.js';
import { PERMIT_ACQUIRE, PERMIT_RELEASE } from '../../lib/core/permit-scripts.js';
import { ACQUIRE, CONFIRM_TOKEN, LEAVE_QUEUE, RELEASE, SLOT_EXTEND, type Script } from '../../lib/core/scripts.js';
import { errorKind, normalize, runBoth, seeded, snapshot, useRedisServer, type Replies, type Side } from './differential.js';

/**
 * The semaphore slots' drift guard, as permit-differential.e2e-spec.ts's for the
 * permits': the same random sequence of slot-script calls on a redis-server and on
 * a MemoryRedisNode must give the same replies, PUBLISH messages and keys (with
 * their lives). A semaphore of limit n is n slots, each a lock key
 * `d:lock#<i>:<resource>` with its own queue, and the resource's marker
 * `d:lock:<resource>` holding '#<limit>'. Drawn: slots taken (fenced or not, fair
 * or not, joining a slot's queue or not) on two semaphores of two limits, now and
 * then with another limit (a mismatch); releases (plain, leaving the queue, an
 * undo naming its waiter), LEAVE_QUEUE, SLOT_EXTEND, CONFIRM_TOKEN; a mutex and a
 * read-write lock's permit on a resource used as a semaphore, and the reverse; the
 * operators' INSPECT and FORCE_RELEASE of a semaphore; slots and queue entries of
 * 1 ms, followed by a pause both clocks pass.
 */
describe('MemoryRedisNode slot scripts answer like Redis', () => {
  const server = useRedisServer();

  const STEPS = Number(process.env.DIFF_STEPS ?? 400);
  const SEEDS = process.env.DIFF_SEEDS ? process.env.DIFF_SEEDS.split(',').map(Number) : [9, 11, 32]; // seeds 1-40 all answered alike; these 3 met every outcome wanted below
  // Each resource's limit; another one is drawn now and then (a mismatch). The second has a hash
  // tag and a ':' of its own, as a Redis Cluster layout's keys: a slot's tag ends at the first ':'.
  // 'c' is mostly a mutex's or a read-write lock's: a semaphore's marker, once set, outlives the run
  // while waiters stay queued, so the slots would seldom meet another use on the other two.
  const LIMITS: Record<string, number> = { a: 2, '{Tb}:b': 3, c: 2 };
  const OTHER_USES = ['mutex', 'mutex-release', 'rw'];

  it.each(SEEDS)(`on ${STEPS} random calls of every slot script (seed %i)`, async (initialSeed) => {
    const { random, pick } = seeded(initialSeed);
    const values = ['v1', 'v2', 'v3'];
    const waiters = ['c1.w1', 'c1.w2', 'c2.w3', 'c2.w4', 'c1.w5', 'c2.w6'];
    // The mutex's waiters by other names: a message to one of `waiters` is a slot's.
    const mutexWaiters = ['c1.m1', 'c2.m2'];
    const base = Date.now();
    // Fencing tokens are drawn from the floors sent ((base + 0 or 7) ms in µs), never from a
    // server's clock: equal on both sides, so compared exactly (as their distance to the first floor).
    const firstFloor = base * 1000;
    const exact = (value: unknown): unknown => {
      if (Array.isArray(value)) return value.map(exact);
      if ((typeof value === 'number' || typeof value === 'string') && /^\d{15,}$/.test(String(value)))
        return `floor+${Number(value) - firstFloor}`;
      return normalize(value);
    };
    // Waiters of two clients: a freed slot wakes or hands over on its waiter's client's channel.
    const { redis, memory, published, publishedAlike } = await server.fresh(
      ['d:wake:c1', 'd:wake:c2'],
      (c, m) => `${c} ${m.replace(/\b\d{15,}\b/g, (t) => `floor+${Number(t) - firstFloor}`).replace(/\b\d{12,}\b/g, 'clock')}`,
    );

    const tokens = { redis: 0, memory: 0 };
    const outcomes = new Set<string>();
    // WRONGKIND with the use it names: a slot refused for another limit, a mutex or a read-write lock.
    const run = (script: Script, keys: string[], args: (side: Side) => (string | number)[]) =>
      runBoth(redis, memory, script, keys, args, errorKind);

    for (let step = 0; step < STEPS; step++) {
      const op = pick([
        'slot',
        'slot',
        'slot',
        'slot',
        'release',
        'release',
        'release',
        'leave',
        'leave',
        'extend',
        'confirm',
        'mutex',
        'mutex-release',
        'rw',
        'inspect',
        'force',
        'force',
      ]);
      const rest = pick(OTHER_USES.includes(op) ? ['a', '{Tb}:b', 'c', 'c', 'c', 'c'] : ['a', 'a', 'a', '{Tb}:b', '{Tb}:b', '{Tb}:b', 'c']);
      const limit = random() < 0.9 ? LIMITS[rest]! : pick([1, 2, 3]);
      const slot = Math.floor(random() * limit);
      const slotKey = `d:lock#${slot}:${rest}`;
      const value = pick(values);
      // Now and then a slot or a queue entry of 1 ms: the pause after the step lets both clocks pass it.
      const short = random() < 0.06;
      let label = `${step} ${op} ${rest}`;
      let result: Replies;
      switch (op) {
        case 'slot': {
          const fencing = random() < 0.5;
          const fair = random() < 0.8;
          const waiter = fair ? pick([...waiters, '-']) : '';
          // A place near the clock now (both sides clamp one over a second away to their own clock).
          const since = Date.now() + pick([0, 0, 1, 2]);
          const spec = waiter === '' || waiter === '-' ? waiter : `${waiter} ${since} ${short ? 1 : 20_000} ${pick([1, 2])}`;
          const ttl = short ? 1 : pick([30_000, 100_000]);
          // As the client sends a slot's: the prefix's length, the fencing pair or two empty strings, the limit.
          const args = [value, ttl, spec, 2, fencing ? 60_000 : '', fencing ? (base + pick([0, 7])) * 1000 : '', limit];
          label += ` #${slot}/${limit} ${JSON.stringify(args)}`;
          result = await run(ACQUIRE, [slotKey], () => args);
          for (const side of ['redis', 'memory'] as const) {
            const reply = side === 'redis' ? result.fromRedis : result.fromMemory;
            if (Array.isArray(reply) && reply[0] === 1 && reply[1] > 0) tokens[side] = reply[1] as number;
          }
          // A refusal naming the free slots, by how many (which ones depends on the draw); or, a
          // named slot held, the slots whose queue is much shorter (none was free).
          if (Array.isArray(result.fromRedis) && Array.isArray(result.fromRedis[2])) {
            const named = result.fromRedis[2] as number[];
            const held = await Promise.all(named.map((k) => redis.exists(`d:lock#${k}:${rest}`)));
            outcomes.add(held.some((e) => e === 1) ? 'slot shorter' : `slot free ${named.length}`);
          }
          break;
        }
        case 'release': {
          const fair = random() < 0.8;
          // A holder that had queued leaves its slot's queue ('' or absent: it never queued); an undo names its waiter.
          // A semaphore's release sends its fencing floor (µs) after both, for the hand-over's token.
          const floor = String((base + pick([0, 7])) * 1000 + pick([0, 1, 500]));
          const leaving = pick([[], [''], ...waiters.map((w) => [w]), ['', pick(waiters)], ['', '', floor], [pick(waiters), '', floor]]);
          const args = fair ? [value, 2, ...leaving] : [value];
          label += ` #${slot} ${JSON.stringify(args)}`;
          result = await run(RELEASE, [slotKey], () => args);
          break;
        }
        case 'leave': {
          // Mostly a slot's queue; now and then the resource's mutex queue.
          const tag = random() < 0.8 ? `#${slot}` : '';
          const keys = [`d:queue${tag}:${rest}`, `d:queue-deadlines${tag}:${rest}`];
          const args = [pick(tag ? waiters : mutexWaiters), 'd:wake:'];
          label += ` ${keys[0]} ${args[0]}`;
          result = await run(LEAVE_QUEUE, keys, () => args);
          break;
        }
        case 'extend': {
          const ttl = short ? 1 : pick([30_000, 100_000]);
          label += ` #${slot}/${limit} ${value} ${ttl}`;
          result = await run(SLOT_EXTEND, [slotKey, `d:lock:${rest}`], () => [value, ttl, limit]);
          break;
        }
        case 'confirm': {
          const above = pick([0, 1, 5]);
          label += ` #${slot} ${value} +${above}`;
          result = await run(CONFIRM_TOKEN, [slotKey, `d:fence:${rest}`], (side) => [value, String(tokens[side] + above), 1, 60_000]);
          break;
        }
        case 'mutex': {
          // A mutex on a semaphore's resource: refused, typed, where it reads the marker (fair waiting or fencing on).
          const fencing = random() < 0.5;
          const fair = random() < 0.7;
          const waiter = fair ? pick([...mutexWaiters, '-']) : '';
          const spec = waiter === '' || waiter === '-' ? waiter : `${waiter} ${Date.now() + pick([0, 1])} 20000 ${pick([1, 2])}`;
          const layout = fencing ? [2, 60_000, (base + pick([0, 7])) * 1000] : fair || random() < 0.5 ? [2] : [];
          const args = [value, short ? 1 : 30_000, spec, ...layout];
          label += ` ${JSON.stringify(args)}`;
          result = await run(ACQUIRE, [`d:lock:${rest}`], () => args);
          for (const side of ['redis', 'memory'] as const) {
            const reply = side === 'redis' ? result.fromRedis : result.fromMemory;
            if (Array.isArray(reply) && reply[0] === 1 && reply[1] > 0) tokens[side] = reply[1] as number;
          }
          break;
        }
        case 'mutex-release': {
          const fair = random() < 0.8;
          const args = fair ? [value, 2, ...pick([[], [pick(mutexWaiters)]])] : [value];
          label += ` ${JSON.stringify(args)}`;
          result = await run(RELEASE, [`d:lock:${rest}`], () => args);
          break;
        }
        case 'rw': {
          // A read-write lock's permit (one reader, so that its set has one order): a slot meets its set, it meets the marker.
          const take = random() < 0.6;
          label += take ? ' take' : ' give back';
          result = take
            ? await run(PERMIT_ACQUIRE, [`d:lock:${rest}`, `d:kind:${rest}`], () => ['r1', short ? 1 : 30_000, 'rw', ''])
            : await run(PERMIT_RELEASE, [`d:lock:${rest}`], () => ['r1', 'rw']);
          break;
        }
        case 'inspect': {
          // Without the prefix's length (an earlier client) it sees the marker's limit, not the slots: drawn now and then too.
          const args = random() < 0.8 ? [2] : [];
          const deadlines = random() < 0.5 ? [`d:queue-deadlines:${rest}`] : [];
          label += ` ${JSON.stringify(args)}`;
          result = await run(INSPECT, [`d:lock:${rest}`, `d:fence:${rest}`, `d:queue:${rest}`, `d:kind:${rest}`, ...deadlines], () => args);
          break;
        }
        default: {
          // An operator evicts: the only holder (unnamed), one holder by its fingerprint, or nobody there.
          const holder = pick(['', fingerprint(value), '000000000000']);
          const fencing = random() < 0.5;
          const args = [
            holder,
            fencing ? (base + pick([0, 7])) * 1000 : '',
            fencing ? 60_000 : '',
            'd:wake:',
            ...(random() < 0.85 ? [2] : []),
          ];
          label += ` ${JSON.stringify(args)}`;
          const keys = [`d:lock:${rest}`, `d:fence:${rest}`, `d:queue:${rest}`, `d:queue-deadlines:${rest}`, `d:kind:${rest}`];
          result = await run(FORCE_RELEASE, keys, () => args);
        }
      }
      if (short) label += ' short';
      expect({ step: label, reply: exact(result.fromMemory) }).toEqual({ step: label, reply: exact(result.fromRedis) });
      // A refusal for another semaphore by what it names, not by which limit (the draw decides that).
      outcomes.add(`${op} ${JSON.stringify(normalize(result.fromRedis)).replace(/WRONGKIND \d+/, 'WRONGKIND limit')}`);
      // The operators' calls by outcome (-2..1) and by kind found (a limit, 'mutex', 'rw', none).
      if ((op === 'force' || op === 'inspect') && Array.isArray(result.fromRedis))
        outcomes.add(`${op} ${op === 'force' ? result.fromRedis[0] : result.fromRedis[0] === null ? 'none' : result.fromRedis[0]}`);
      if (process.env.DIFF_TRACE) console.log(label, JSON.stringify(result));
      // A release or a leaver may hand a slot over with the 1 ms ttl a short acquire left in its hand-over: let it expire on both sides too.
      if (short || op === 'release' || op === 'mutex-release' || op === 'leave') await sleep(5);
      // The whole key space, with each key's life, after every step: a marker kept too short or left behind shows at once.
      const [inRedis, inMemory] = await Promise.all([
        snapshot(redis, 'd:', { lives: true, normalize: exact }),
        snapshot(memory, 'd:', { lives: true, normalize: exact }),
      ]);
      expect({ step: label, keys: inMemory }).toEqual({ step: label, keys: inRedis });
      if (Object.keys(inRedis).some((k) => k.startsWith('d:queue#'))) outcomes.add('slot queued');
    }

    await publishedAlike();
    // Hand-overs of a slot ('<channel> <waiter> <attempt> <token>', fenced or not) and wake-ups to move to a freed slot ('<waiter> #<slot>') among them.
    const slotMessages = published.redis.filter((m) => /^\S+ c\d\.w\d /.test(m));
    const handOvers = slotMessages.filter((m) => m.split(' ').length === 4);
    expect(handOvers.some((m) => m.endsWith(' 0'))).toBe(true);
    expect(handOvers.some((m) => / floor\+\d+$/.test(m))).toBe(true);
    expect(slotMessages.some((m) => / #\d+$/.test(m))).toBe(true);
    // The run met what it is meant to compare (a seed of DIFF_SEEDS that misses one is a poor seed, not a drift).
    const wanted = [
      'slot [1,"clock"]',
      'slot [1,0]',
      'slot [0,-1]',
      'slot free 1',
      'slot shorter',
      'slot [0,-3]',
      'slot "error WRONGKIND limit"',
      'slot "error WRONGKIND mutex"',
      'slot "error WRONGKIND rw"',
      'slot queued',
      'release 0',
      'release 1',
      'extend 0',
      'extend 1',
      'confirm 0',
      'confirm 1',
      'mutex "error WRONGKIND limit"',
      'rw "error WRONGKIND limit"',
      'force 1',
      'force 0',
      'force -1',
      'force -2',
      'inspect 2',
      'inspect 3',
    ];
    // The ones missed, by name (a poor seed says which outcome it lacks).
    expect(wanted.filter((o) => !outcomes.has(o))).toEqual([]);
  });
});
