/**
 * Fair waiting (the queue and the wake-ups), over any kind of node: run by
 * waiting.e2e-spec.ts on ioredis connections and by each client library's spec.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { setTimeout as sleep } from 'node:timers/promises';
import { LockAbortedError, Redlock, ResourceBusyError, type Lock } from '../../lib/index.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';
import { commandCalls, keysLeft, onEveryNode } from '../support/node-stats.js';
import type { NodeKind, OpenedNodes } from '../support/node-kinds.js';
import { until } from '../support/until.js';
import { handOverWaiter, subscribed } from '../support/waiter.js';
import { TEST_NODE_TIMEOUT } from '../support/timeouts.js';

export function describeWaiting(kind: NodeKind): void {
  describe(`waiting for a busy resource: ${kind.name}`, () => {
    let fleet: RedisFleet;
    let opened: OpenedNodes;
    /** ioredis connections for looking behind the lock clients' back. */
    let raw: Redis[];
    const clients: Redlock[] = [];

    function client(options: Partial<ConstructorParameters<typeof Redlock>[0]> = {}): Redlock {
      const redlock = new Redlock({ nodes: opened.nodes, nodeTimeout: TEST_NODE_TIMEOUT, ...options });
      clients.push(redlock);
      return redlock;
    }

    // A waiter's queue entries, and what it left for a release to hand it the lock.
    const queueKeysLeft = async () => [...(await keysLeft(raw, 'redlock:queue*')), ...(await keysLeft(raw, 'redlock:handover:*'))];

    beforeAll(async () => {
      fleet = await startFleet(3);
      raw = fleet.urls.map((u) => new Redis(u));
      opened = await kind.open(fleet);
    });
    afterEach(async () => {
      await Promise.all(clients.splice(0).map((c) => c.close()));
      await Promise.all(raw.map((r) => r.flushall()));
    });
    afterAll(async () => {
      await opened?.close();
      raw?.forEach((r) => r.disconnect());
      await fleet?.stop();
    });

    it('is woken by the release, not by its polling delay', async () => {
      const holder = client();
      const waiter = client({ retryDelay: 5000, retryJitter: 0 }); // polling alone would take 5 s
      // Subscribed (up front) before it waits: no extra look once the subscription is confirmed.
      await until(() => subscribed(waiter), 'the waiter subscribed');
      // The holder subscribes up front as well, on a connection of its own: counted below.
      await until(() => subscribed(holder), 'the holder subscribed');
      const held = await holder.acquire('wake', 10_000);
      await until(() => onEveryNode(raw, 'redlock:lock:wake'), 'the holder on every node');
      const waiting = waiter.acquire('wake', 10_000);
      await until(async () => (await raw[0]!.zcard('redlock:queue:wake')) === 1, 'the waiter in the queue');
      // The queue entry names the waiter's client, whose own channel the release publishes on.
      const [entry] = await raw[0]!.zrange('redlock:queue:wake', '0', '0');
      const channel = `redlock:wake:${entry!.split('.')[0]}`;
      // Subscribed on every node, so the wake-up can only come from the release's PUBLISH.
      await until(
        async () => (await Promise.all(raw.map((r) => r.pubsub('NUMSUB', channel)))).every((n) => n[1] === 1),
        'the subscriptions',
      );
      // Every client has a channel of its own (subscribed up front when its calls wait by
      // default); the release publishes on the waiter's only, so no other client is woken.
      const listener = new Redis(fleet.urls[0]!);
      const published: string[] = [];
      listener.on('pmessage', (_pattern: string, at: string) => published.push(at));
      await listener.psubscribe('redlock:wake:*');
      try {
        expect((await raw[0]!.pubsub('CHANNELS', 'redlock:wake:*')).length).toBe(2);
        const released = performance.now();
        await held.release();
        const lock = await waiting;
        expect(performance.now() - released).toBeLessThan(200);
        await until(() => published.length > 0, 'the release published on node 0');
        expect(published).toEqual([channel]);
        await lock.release();
        await until(async () => (await queueKeysLeft()).length === 0, 'empty queues');
      } finally {
        listener.disconnect();
      }
    });

    it('hands a freed resource to the longest waiter, not to the process that just released', async () => {
      const holder = client({ retryDelay: 5, retryJitter: 5 });
      const first = client({ retryDelay: 5000, retryJitter: 0 });
      const second = client({ retryDelay: 5000, retryJitter: 0 });
      const held = await holder.acquire('fair', 10_000);
      // Decided at a quorum: a late node could let the first waiter take it there (and
      // undo it), which is correct but not the story this test tells.
      await until(() => onEveryNode(raw, 'redlock:lock:fair'), 'the holder on every node');
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

    it('is not woken by the undo of its own attempt', async () => {
      // Held on nodes 1 and 2; on node 0 only briefly (a holder whose third SET came late
      // and expired): the first attempt queues the waiter on every node, then each attempt
      // takes node 0, where it is the head, is refused on a quorum, and is undone on node 0.
      const waiter = client({ retryDelay: 400, retryJitter: 0 });
      await until(() => subscribed(waiter), 'the waiter subscribed');
      await raw[0]!.set('redlock:lock:undone', 'another holder', 'PX', 100);
      await Promise.all([1, 2].map((i) => raw[i]!.set('redlock:lock:undone', 'another holder', 'PX', 10_000)));
      const scripts = () => commandCalls(raw[0]!, 'evalsha');
      const before = await scripts();
      const controller = new AbortController();
      const waiting = waiter.acquire('undone', 10_000, { signal: controller.signal }).catch((e: unknown) => e);
      // Attempt 1 (refused), attempt 2 (taken on node 0) and its undo.
      await until(async () => (await scripts()) - before >= 3, 'the second attempt undone on node 0');
      expect(await raw[0]!.zrange('redlock:queue:undone', '0', '-1')).toEqual([expect.any(String)]);
      // A wake from its own undo would retry at once, long before the 400 ms retry delay
      // (and again after each retry's undo).
      await sleep(200);
      expect((await scripts()) - before).toBe(3);
      controller.abort();
      expect(await waiting).toBeInstanceOf(LockAbortedError);
    });

    it("does not let a short-lived waiter cut the life of a longer one's queue entry (the queue keys' ttl only grows)", async () => {
      const holder = client();
      const patient = client({ retryDelay: 5000, retryJitter: 0 });
      const held = await holder.acquire('patient', 10_000);
      await until(() => onEveryNode(raw, 'redlock:lock:patient'), 'the holder on every node');
      const waiting = patient.acquire('patient', 10_000);
      await until(
        async () => (await Promise.all(raw.map((r) => r.zcard('redlock:queue:patient')))).every((n) => n === 1),
        'the patient waiter queued on every node',
      );
      const hasty = client({ retryDelay: 10, retryJitter: 0, retryCount: 1 });
      await expect(hasty.acquire('patient', 10_000)).rejects.toBeInstanceOf(ResourceBusyError);
      // The patient entry lives about 2 x (5000 + node timeout) + 100 ms: so do the keys that hold it.
      for (const key of ['redlock:queue:patient', 'redlock:queue-deadlines:patient', 'redlock:handover:patient']) {
        for (const ttl of await Promise.all(raw.map((r) => r.pttl(key)))) expect(ttl).toBeGreaterThan(5000);
      }
      await held.release();
      await (await waiting).release();
    });

    it('leaves nothing behind when the waiter is aborted or gives up', async () => {
      // Both waiters' queue entries would live for over 5 s (2 x (retry delay + node
      // timeout) + 100 ms): queues empty within 2 s were left, not expired.
      const holder = client();
      const held = await holder.acquire('leave', 10_000);
      // Decided at a quorum: on a node its SET reached late, the waiter would take the key (not queue) there.
      await until(() => onEveryNode(raw, 'redlock:lock:leave'), 'the holder on every node');
      // Aborted while it waits in the queue.
      const controller = new AbortController();
      const aborted = client({ retryDelay: 5000 })
        .acquire('leave', 10_000, { signal: controller.signal })
        .catch((e: unknown) => e);
      await until(async () => (await raw[0]!.zcard('redlock:queue:leave')) === 1, 'the waiter in the queue');
      controller.abort();
      expect(await aborted).toBeInstanceOf(LockAbortedError);
      await until(async () => (await queueKeysLeft()).length === 0, 'empty queues after the abort', 2000);
      // Gives up at its deadline, after several attempts. Its wait is not watched (on a
      // busy machine it can be over before a look at the queue): a node refusing it for
      // the holder's key is what queued it there.
      const timedOut = await client({ retryDelay: 20, retryJitter: 0, nodeTimeout: 2600 })
        .acquire('leave', 10_000, { acquireTimeout: 150 })
        .catch((e: unknown) => e);
      expect(timedOut).toBeInstanceOf(ResourceBusyError);
      const refusals = (timedOut as ResourceBusyError).attempts.flatMap((a) => a.nodes).filter((n) => n.outcome === 'busy');
      expect(refusals.length).toBeGreaterThan(0);
      await until(async () => (await queueKeysLeft()).length === 0, 'empty queues after giving up', 2000);
      await held.release();
    });

    it('leaves no key behind when it gives up after a release handed it the lock', async () => {
      const holder = client();
      const waiter = client({ retryDelay: 5000, retryJitter: 0 });
      await until(() => subscribed(waiter), 'the waiter subscribed');
      // It never hears of the hand-over: its subscriptions are closed.
      (waiter as unknown as { notifier: { close(): void } }).notifier.close();
      const held = await holder.acquire('unheard', 10_000);
      // Decided at a quorum: on a node its SET reached late, the waiter's attempt would take the key first.
      await until(() => onEveryNode(raw, 'redlock:lock:unheard'), 'the holder on every node');
      const controller = new AbortController();
      const waiting = waiter.acquire('unheard', 10_000, { signal: controller.signal }).catch((e: unknown) => e);
      // Its second attempt (the look again when its subscriptions are "confirmed") queued it on every node.
      const entries = () => Promise.all(raw.map((r) => r.hvals('redlock:handover:unheard')));
      // Its hand-over: ttl, attempt, ...
      await until(async () => (await entries()).every((e) => e.length === 1 && e[0]!.split(' ')[1] === '2'), 'queued by attempt 2');
      // The queue's deadlines stay plain numbers: an earlier version's scripts, run by another
      // process during a rolling deploy, compare them with the clock.
      const deadlines = (await Promise.all(raw.map((r) => r.hvals('redlock:queue-deadlines:unheard')))).flat();
      expect(deadlines.every((d) => /^\d+$/.test(d))).toBe(true);
      const holderValue = await raw[0]!.get('redlock:lock:unheard');
      await held.release();
      // Handed over: the key holds another value (the waiter's) on every node.
      const values = () => Promise.all(raw.map((r) => r.get('redlock:lock:unheard')));
      await until(async () => (await values()).every((v) => v !== null && v !== holderValue), 'the lock handed over on every node');
      controller.abort();
      expect(await waiting).toBeInstanceOf(LockAbortedError);
      await until(async () => (await keysLeft(raw, 'redlock:lock:*')).length + (await queueKeysLeft()).length === 0, 'no key left', 2000);
      await (await holder.acquire('unheard', 10_000, { retryCount: 0 })).release();
    });

    it('hands the lock to the first live waiter, past the stale entry of a waiter that crashed', async () => {
      const holder = client();
      const { waiter, handedOver } = await handOverWaiter(client);
      const held = await holder.acquire('crashed', 10_000);
      // Decided at a quorum: on a node its SET reached late, the waiter's attempt would find the
      // key free, drop the stale entry and take the key there (then undo it), not queue behind it.
      await until(() => onEveryNode(raw, 'redlock:lock:crashed'), 'the holder on every node');
      // First in line on every node: a waiter that crashed, its entry stale (an attempt refused by a
      // held key leaves the queue as it is).
      await Promise.all(
        raw.map((r) =>
          r
            .multi()
            .zadd('redlock:queue:crashed', Date.now() - 5000, 'crashed.1')
            .hset('redlock:queue-deadlines:crashed', 'crashed.1', Date.now() - 1)
            .exec(),
        ),
      );
      const waiting = waiter.acquire('crashed', 10_000);
      await until(
        async () => (await Promise.all(raw.map((r) => r.zcard('redlock:queue:crashed')))).every((n) => n === 2),
        'queued behind it',
      );
      await held.release();
      // Handed over by the release, not taken by an attempt 5 s later (its retry delay).
      const lock = await waiting;
      expect([lock.attempts, handedOver]).toEqual([1, [true]]);
      await lock.release();
    });

    it('takes the lock with an attempt soon after a hand-over that reached too few nodes, not after its node timeout', async () => {
      const holder = client();
      const { waiter, handedOver } = await handOverWaiter((options) => client({ ...options, nodeTimeout: 2000 }), { shortGrace: true });
      const held = await holder.acquire('partial', 10_000);
      await until(() => onEveryNode(raw, 'redlock:lock:partial'), 'the holder on every node');
      const waiting = waiter.acquire('partial', 10_000);
      const queued = () => Promise.all(raw.map((r) => r.zcard('redlock:queue:partial')));
      await until(async () => (await queued()).every((n) => n === 1), 'the waiter queued on every node');
      // Nodes 1 and 2 forget it: their releases hand the lock to no one, and only node 0 announces a hand-over.
      for (const r of raw.slice(1)) await r.del('redlock:queue:partial', 'redlock:queue-deadlines:partial', 'redlock:handover:partial');
      const released = performance.now();
      await held.release();
      const lock = await waiting;
      // It waited a moment for the other nodes' announcements, not its 2 s node timeout, then
      // its attempt found the lock handed over on node 0 and took the other two.
      expect(performance.now() - released).toBeLessThan(1000);
      expect(lock.attempts).toBe(2);
      expect(handedOver).toEqual([false]);
      await lock.release();
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

    it('waits for a hand-over until its acquireTimeout, though its next attempt would come later', async () => {
      // It gave up at once when the retry delay reached past the deadline: a release before
      // the deadline (here, 1.5 s of it left) found nobody waiting.
      const holder = client();
      const waiter = client({ retryDelay: 5000, retryJitter: 0 });
      const held = await holder.acquire('deadline', 10_000);
      const waiting = waiter.acquire('deadline', 10_000, { acquireTimeout: 2000 }).catch((e: unknown) => e);
      await until(() => waiter.stats.waiting === 1, 'the waiter waiting', 1000);
      await held.release();
      const lock = await waiting;
      expect(lock).toMatchObject({ resources: ['deadline'] });
      await (lock as Lock).release();
    });

    it('shares one resource fairly among eight contending clients', async () => {
      const contenders = Array.from({ length: 8 }, () => client({ retryDelay: 100 }));
      const counts = contenders.map(() => 0);
      // Fairness counted in turns, not in ms (a loaded machine stretches every wait): how many
      // locks the others took while one contender waited. In queue order that is at most the
      // other 7; an unfair lock lets a releasing client take it straight back, hundreds of times.
      let taken = 0;
      let mostOvertaken = 0;
      const end = performance.now() + 1500;
      await Promise.all(
        contenders.map(async (redlock, i) => {
          while (performance.now() < end) {
            const before = taken;
            const lock = await redlock.acquire('contended', 5000, { retryCount: 1000 });
            mostOvertaken = Math.max(mostOvertaken, taken - before);
            taken++;
            counts[i]!++;
            await sleep(1);
            await lock.release();
          }
        }),
      );
      const worst = Math.min(...counts);
      const best = Math.max(...counts);
      expect(worst).toBeGreaterThanOrEqual(best / 2);
      // Some slack over 7: an entry not refreshed in time (its process stalled) is skipped once.
      expect(mostOvertaken).toBeLessThanOrEqual(2 * 7);
    });
  });
}
