import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { setTimeout as sleep } from 'node:timers/promises';
import { LockAbortedError, Redlock, ResourceBusyError } from '../../lib/index.js';
import { ACQUIRE, RELEASE } from '../../lib/core/scripts.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';
import { until } from '../support/until.js';

let fleet: RedisFleet;
let raw: Redis[];
const clients: Redlock[] = [];

function client(options: Partial<ConstructorParameters<typeof Redlock>[0]> = {}): Redlock {
  const redlock = new Redlock({ nodes: fleet.urls, ...options });
  clients.push(redlock);
  return redlock;
}

const queueKeysLeft = async () =>
  (await Promise.all(raw.map((r) => r.keys('redlock:queue*')))).flat();

/**
 * Waits until one waiter queues for `resource` and its client's channel is
 * subscribed on every node; returns the waiter's id (its queue entry) and that
 * channel, which the release publishes on.
 */
async function queuedWaiter(resource: string): Promise<{ entry: string; channel: string }> {
  const queue = `redlock:queue:${resource}`;
  await until(async () => (await raw[0]!.zcard(queue)) === 1, 'the waiter in the queue');
  // The queue entry names the waiter's client, whose own channel the release publishes on.
  const [entry] = await raw[0]!.zrange(queue, '0', '0');
  const channel = `redlock:wake:${entry!.split('.')[0]}`;
  await until(
    async () => (await Promise.all(raw.map((r) => r.pubsub('NUMSUB', channel)))).every((n) => n[1] === 1),
    'the subscriptions',
  );
  return { entry: entry!, channel };
}

beforeAll(async () => {
  fleet = await startFleet(3);
  raw = fleet.urls.map((u) => new Redis(u));
});
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  await Promise.all(raw.map((r) => r.flushall()));
});
afterAll(async () => {
  raw?.forEach((r) => r.disconnect());
  await fleet?.stop();
});

describe('waiting for a busy resource', () => {
  it('is woken by the release, not by its polling delay', async () => {
    const holder = client();
    const waiter = client({ retryDelay: 5000, retryJitter: 0 }); // polling alone would take 5 s
    const held = await holder.acquire('wake', 10_000);
    const waiting = waiter.acquire('wake', 10_000);
    // Subscribed on every node, so the wake-up can only come from the release's PUBLISH.
    const { channel } = await queuedWaiter('wake');
    // Every client has a channel of its own (subscribed up front when its calls wait by
    // default); the release publishes on the waiter's only, so no other client is woken.
    const listener = new Redis(fleet.urls[0]!);
    const published: string[] = [];
    listener.on('pmessage', (_pattern: string, at: string) => published.push(at));
    await listener.psubscribe('redlock:wake:*');
    try {
      expect((await raw[0]!.pubsub('CHANNELS', 'redlock:wake:*')).length).toBe(2);
      await sleep(50); // let the subscription-confirmed retry come and go
      const released = performance.now();
      await held.release();
      const lock = await waiting;
      expect(performance.now() - released).toBeLessThan(200);
      await until(() => published.length > 0, 'the release published on node 0');
      expect(published).toEqual([channel]);
      await lock.release();
      expect(await queueKeysLeft()).toEqual([]);
    } finally {
      listener.disconnect();
    }
  });

  it('hands the lock straight to the first waiter of one resource: held on the release, with no attempt of its own', async () => {
    const holder = client();
    const waiter = client({ retryDelay: 5000, retryJitter: 0 });
    // Subscribed before it waits: no extra look once the subscription is confirmed.
    const notifier = (waiter as unknown as { notifier: { isSubscribed: boolean } }).notifier;
    await until(() => notifier.isSubscribed, 'the waiter subscribed');
    const held = await holder.acquire('handover', 10_000);
    const waiting = waiter.acquire('handover', 10_000);
    const { entry, channel } = await queuedWaiter('handover');
    const listener = new Redis(fleet.urls[0]!);
    const published: string[] = [];
    listener.on('message', (_channel: string, message: string) => published.push(message));
    await listener.subscribe(channel);
    const scripts = async () =>
      (await Promise.all(raw.map(async (r) => Number(/cmdstat_evalsha:calls=(\d+)/.exec(await r.info('commandstats'))?.[1] ?? 0)))).reduce((a, b) => a + b);
    try {
      await Promise.all(raw.map((r) => r.config('RESETSTAT')));
      await held.release();
      const lock = await waiting;
      // The releases were the only scripts: the waiter made no attempt after its first.
      await until(async () => (await scripts()) === raw.length, 'one release per node');
      expect(lock.attempts).toBe(2);
      // Node 0 published the hand-over: the waiter's id, its token, its attempt's start.
      await until(() => published.length > 0, 'the hand-over message');
      const [id, token] = published[0]!.split(' ');
      expect(id).toBe(entry);
      expect(lock.fencingToken).toBe(Number(token));
      expect(await Promise.all(raw.map((r) => r.zcard('redlock:queue:handover')))).toEqual([0, 0, 0]);
      await lock.release();
      expect(await Promise.all(raw.map((r) => r.exists('redlock:lock:handover')))).toEqual([0, 0, 0]);
    } finally {
      listener.disconnect();
    }
  });

  it("counts a handed-over lock's validity from the waiter's last attempt, which came before the hand-over", async () => {
    const holder = client();
    const waiter = client({ retryDelay: 5000, retryJitter: 0 });
    const held = await holder.acquire('validity', 10_000);
    const waiting = waiter.acquire('validity', 2000);
    await until(async () => (await raw[0]!.zcard('redlock:queue:validity')) === 1, 'the waiter in the queue');
    const queued = performance.now();
    await sleep(300); // the holder's critical section: the hand-over comes this much after the attempt
    await held.release();
    const lock = await waiting;
    expect(lock.validity).toBeLessThanOrEqual(2000 - (performance.now() - queued));
    expect(lock.validity).toBeGreaterThan(1000);
    await lock.release();
  });

  it('a waiter that gives up frees the keys a release handed it meanwhile, and hands them on', async () => {
    // The scripts alone, on one node: holder H, then waiters A and B of resource g.
    const keys = ['redlock:lock:g', 'redlock:queue:g', 'redlock:queue-deadlines:g'];
    const node = raw[0]!;
    await node.set(keys[0]!, 'h-value', 'PX', 10_000);
    const now = Date.now();
    expect(await node.evalsha(ACQUIRE.sha, 3, ...keys, 'a-value', '5000', `c1.a ${now} 5000 ${now + 0.5}`)).toEqual([0, expect.any(Number)]);
    expect(await node.evalsha(ACQUIRE.sha, 3, ...keys, 'b-value', '5000', `c2.b ${now + 1} 5000 ${now + 1.5}`)).toEqual([0, expect.any(Number)]);
    // H releases: the key goes to A, who leaves the queue.
    expect(await node.evalsha(RELEASE.sha, 3, ...keys, 'h-value', 'redlock:wake:', '')).toBe(1);
    expect(await node.get(keys[0]!)).toBe('a-value');
    expect(await node.zrange(keys[1]!, '0', '-1')).toEqual(['c2.b']);
    // A gave up before it had a quorum: its release deletes the key and hands it to B.
    expect(await node.evalsha(RELEASE.sha, 3, ...keys, 'a-value', 'redlock:wake:', 'c1.a')).toBe(1);
    expect(await node.get(keys[0]!)).toBe('b-value');
    expect(await node.zcard(keys[1]!)).toBe(0);
    // A waiter undoing its own failed attempt is woken to retry, never handed its own value back.
    await node.del(keys[0]!);
    await node.set(keys[0]!, 'h-value', 'PX', 10_000);
    await node.evalsha(ACQUIRE.sha, 3, ...keys, 'c-value', '5000', `c3.c ${now} 5000 ${now}`);
    await node.set(keys[0]!, 'c-value', 'PX', 10_000); // as if C's next attempt had taken this node
    expect(await node.evalsha(RELEASE.sha, 3, ...keys, 'c-value', 'redlock:wake:', '')).toBe(1);
    expect(await node.exists(keys[0]!)).toBe(0);
    expect(await node.zrange(keys[1]!, '0', '-1')).toEqual(['c3.c']);
  });

  it('hands a freed resource to the longest waiter, not to the process that just released', async () => {
    const holder = client({ retryDelay: 5, retryJitter: 5 });
    const first = client({ retryDelay: 5000, retryJitter: 0 });
    const second = client({ retryDelay: 5000, retryJitter: 0 });
    const held = await holder.acquire('fair', 10_000);
    const order: string[] = [];
    const firstWaits = first.acquire('fair', 10_000).then((l) => (order.push('first'), l));
    await until(async () => (await raw[0]!.zcard('redlock:queue:fair')) === 1, 'first in the queue');
    const secondWaits = second.acquire('fair', 10_000).then((l) => (order.push('second'), l));
    await until(async () => (await raw[0]!.zcard('redlock:queue:fair')) === 2, 'second in the queue');
    await held.release();
    // The releaser comes straight back: the resource is reserved for the first waiter.
    await expect(holder.acquire('fair', 10_000, { retryCount: 0 })).rejects.toBeInstanceOf(ResourceBusyError);
    const winner = await Promise.race([firstWaits, secondWaits]);
    expect(order).toEqual(['first']);
    await winner.release();
    await (await secondWaits).release();
    expect(order).toEqual(['first', 'second']);
  });

  it('leaves nothing behind when the waiter is aborted or gives up', async () => {
    const holder = client();
    const held = await holder.acquire('leave', 10_000);
    const controller = new AbortController();
    const aborted = client().acquire('leave', 10_000, { signal: controller.signal }).catch((e: unknown) => e);
    const timedOut = client({ retryDelay: 20 }).acquire('leave', 10_000, { acquireTimeout: 150 }).catch((e: unknown) => e);
    await until(async () => (await raw[0]!.zcard('redlock:queue:leave')) === 2, 'both in the queue');
    controller.abort();
    expect(await aborted).toBeInstanceOf(LockAbortedError);
    expect(await timedOut).toBeInstanceOf(ResourceBusyError);
    await until(async () => (await queueKeysLeft()).length === 0, 'empty queues');
    await held.release();
  });

  it('leaves the queue when it gives up before its first wait (acquireTimeout shorter than the retry delay)', async () => {
    const holder = client();
    const held = await holder.acquire('brief', 10_000);
    // Refused once (which queues it), then the deadline falls before the next attempt.
    const brief = client({ retryDelay: 500, retryJitter: 0 });
    await expect(brief.acquire('brief', 10_000, { acquireTimeout: 100 })).rejects.toBeInstanceOf(ResourceBusyError);
    // Its entry would otherwise stay for its ttl (2 x (500 ms + node timeout) + 100 ms).
    await until(async () => (await queueKeysLeft()).length === 0, 'empty queues', 300);
    await held.release();
  });

  it('shares one resource fairly among eight contending clients', async () => {
    const contenders = Array.from({ length: 8 }, () => client({ retryDelay: 100 }));
    const counts = contenders.map(() => 0);
    let longestWait = 0;
    const end = performance.now() + 1500;
    await Promise.all(
      contenders.map(async (redlock, i) => {
        while (performance.now() < end) {
          const asked = performance.now();
          const lock = await redlock.acquire('contended', 5000, { retryCount: 1000 });
          longestWait = Math.max(longestWait, performance.now() - asked);
          counts[i]!++;
          await sleep(1);
          await lock.release();
        }
      }),
    );
    const worst = Math.min(...counts);
    const best = Math.max(...counts);
    expect(worst).toBeGreaterThanOrEqual(best / 2);
    expect(longestWait).toBeLessThan(500);
  });
});
