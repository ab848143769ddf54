/**
 * The behaviour of semaphores (`limit`) and read-write locks (`mode`), written
 * once and run against real redis-server nodes (real.e2e-spec.ts) and the
 * testing module's in-memory nodes (memory.spec.ts), like lock-behaviour.ts.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { setTimeout as sleep } from 'node:timers/promises';
import { inspect } from 'node:util';
import { fingerprint } from '../../lib/core/inspection.js';
import { secretOf } from '../../lib/core/lock.js';
import {
  InvalidArgumentError,
  LockKindMismatchError,
  Redlock,
  ResourceBusyError,
  type AcquireOptions,
  type Lock,
  type NodeSpec,
  type RedlockOptions,
} from '../../lib/index.js';
import { PERMIT_ACQUIRE, PERMIT_RELEASE } from '../../lib/core/permit-scripts.js';
import { ACQUIRE, CONFIRM_TOKEN } from '../../lib/core/scripts.js';
import { INSPECT } from '../../lib/core/operator-scripts.js';
import { runScript } from '../../lib/core/script.js';
import { TEST_NODE_TIMEOUT } from '../support/timeouts.js';
import { until } from '../support/until.js';
import { handOverWaiter } from '../support/waiter.js';
import { OPERATOR_NODE_TIMEOUT, type DirectNode, type PermitBackend } from './lock-behaviour.js';

export function describePermitBehaviour(name: string, makeBackend: () => Promise<PermitBackend>): void {
  describe(`semaphore and read-write lock behaviour: ${name}`, () => {
    let backend: PermitBackend;
    const clients: Redlock[] = [];

    const client = (options: Partial<RedlockOptions> = {}): Redlock => {
      const redlock = new Redlock({
        nodes: backend.nodes as NodeSpec[],
        retryDelay: 10,
        retryJitter: 10,
        nodeTimeout: TEST_NODE_TIMEOUT,
        ...options,
      });
      clients.push(redlock);
      return redlock;
    };

    type Join = { waiter: string; since: number; entryTtl: number };
    const ENTRY_TTL = 10_000;
    /**
     * The permit scripts of one read-write lock, each caller a writer (alone, as a
     * lock: the queue rules are those of every permit), called on one node at a time
     * (`fair`: without a queue place unless `join` gives one), as attempts reach the nodes.
     */
    const scriptsOf = (resource: string) => {
      const nodes = backend.direct;
      const [holders, kind, queue, deadlines] = [`${resource}:lock`, `${resource}:kind`, `${resource}:queue`, `${resource}:deadlines`];
      const w = (id: string) => (id === '' ? id : `${id}:w`);
      const acquire = (i: number, member: string, join?: Join) =>
        runScript(
          nodes[i]!,
          PERMIT_ACQUIRE,
          [holders, kind, queue, deadlines],
          PERMIT_ACQUIRE.argv({ member: w(member), ttl: 10_000, kind: 'rw', fair: { join: join && { ...join, waiter: w(join.waiter) } } }),
        ).then((reply) => PERMIT_ACQUIRE.decode(reply).taken);
      const release = (i: number, member: string, { leaving = '', skip = '' } = {}) =>
        runScript(
          nodes[i]!,
          PERMIT_RELEASE,
          [holders, queue, deadlines],
          PERMIT_RELEASE.argv({
            member: w(member),
            kind: 'rw',
            fair: { wakePrefix: `${resource}:wake:`, leaving: w(leaving), skip: w(skip), entryTtl: ENTRY_TTL },
          }),
        );
      const orders = () => Promise.all(nodes.map(async (n) => (await n.zrange(queue, 0, -1)).map((id) => id.replace(/:w$/, ''))));
      const all = nodes.map((_, i) => i);
      const everywhere = <T>(value: T) => all.map(() => value);
      return { acquire, release, orders, all, everywhere };
    };
    /**
     * Until every node has `holders` holders of `resource` and `waiters` entries in its queue (a permit is decided at a
     * quorum: a node may answer later): a semaphore of limit 1 (its one slot, a lock: held or not), or a read-write lock.
     */
    const settledOnEveryNode = (resource: string, holders: number, waiters: number, rw = false) =>
      until(async () => {
        const [lock, queue] = rw
          ? [`redlock:lock:${resource}`, `redlock:queue:${resource}`]
          : [`redlock:lock#0:${resource}`, `redlock:queue#0:${resource}`];
        const held = async (n: DirectNode) => (rw ? (await n.zrange(lock, 0, -1)).length : (await n.pttl(lock)) === -2 ? 0 : 1);
        const counts = await Promise.all(backend.direct.map(async (n) => Promise.all([held(n), n.zrange(queue, 0, -1)])));
        return counts.every(([h, q]) => h === holders && q.length === waiters);
      }, `${holders} holding and ${waiters} queued for ${resource} on every node`);
    /** Whether a permit is refused now (one taken is given back before it answers). */
    const refusedNow = (redlock: Redlock, resource: string, options: AcquireOptions) =>
      redlock.acquire(resource, 5000, { ...options, retryCount: 0 }).then(
        async (lock) => {
          await lock.release();
          return false;
        },
        (error: unknown) => {
          if (error instanceof ResourceBusyError) return true;
          throw error;
        },
      );

    beforeAll(async () => {
      backend = await makeBackend();
    });
    afterEach(async () => {
      await Promise.all(clients.splice(0).map((c) => c.close()));
      await backend.flush();
    });
    afterAll(async () => {
      await backend?.stop();
    });

    it('admits at most `limit` holders at once, from several clients, and serves every caller', async () => {
      const users = [0, 1, 2].map(() => client({ retryCount: 10_000, retryDelay: 5, retryJitter: 10 }));
      let inside = 0;
      let most = 0;
      let done = 0;
      await Promise.all(
        Array.from({ length: 24 }, (_, i) =>
          users[i % 3]!.using(
            'pool',
            2000,
            async (permit) => {
              most = Math.max(most, ++inside);
              expect([permit.limit, permit.mode]).toEqual([3, undefined]);
              await sleep(5);
              inside--;
              done++;
            },
            { limit: 3 },
          ),
        ),
      );
      expect(done).toBe(24);
      expect(most).toBeLessThanOrEqual(3);
      expect(most).toBeGreaterThanOrEqual(2); // it is a semaphore, not a mutex
    });

    it('refuses the permit past the limit, and hands a freed permit over to its waiter long before its 5 s retry delay, with no attempt of its own', async () => {
      // Limit 1: one slot, so the waiter waits in the queue of the permit freed.
      const holder = client();
      const { waiter, handedOver } = await handOverWaiter(client);
      const held = await holder.acquire('one', 10_000, { limit: 1 });
      expect(await refusedNow(client(), 'one', { limit: 1 })).toBe(true);
      const waiting = waiter.acquire('one', 10_000, { limit: 1 });
      await until(async () => (await holder.inspect('one')).waiters === 1, 'the waiter in the queue');
      const released = performance.now();
      await held.release();
      const lock = await waiting;
      expect(performance.now() - released).toBeLessThan(200);
      // Refused once, then handed the permit by the release (a second attempt would make 2).
      expect(lock.attempts).toBe(1);
      expect(handedOver).toEqual([true]);
      expect(lock.fencingToken).toBeGreaterThan(held.fencingToken!);
      await lock.release();
      // Released, it left the queue; the last permit gone, so did the semaphore's marker.
      const left = () =>
        Promise.all(backend.direct.map((n) => Promise.all([n.zrange('redlock:queue#0:one', 0, -1), n.pttl('redlock:lock:one')])));
      await until(async () => (await left()).every(([q, m]) => q.length === 0 && m === -2), 'every queue and marker gone');
    });

    /**
     * A permit of `resource` (limit 1) held on every node, a hand-over waiter queued behind it
     * on every node, and what the two tests of hand-over tokens below need: `raise(node, to)`
     * raises one node's counter (as the grants of other slots and attempts undone leave the
     * nodes' counters), `counters()` reads every node's.
     */
    const heldWithWaiter = async (resource: string) => {
      const holder = client();
      const { waiter, handedOver } = await handOverWaiter(client);
      const held = await holder.acquire(resource, 10_000, { limit: 1 });
      // Held on every node before the waiter asks (held at a quorum, it may not have reached the last node yet).
      await settledOnEveryNode(resource, 1, 0);
      const waiting = waiter.acquire(resource, 10_000, { limit: 1 });
      await settledOnEveryNode(resource, 1, 1);
      const keys = [`redlock:lock#0:${resource}`, `redlock:fence:${resource}`];
      const raise = (node: number, to: number) =>
        runScript(backend.direct[node]!, CONFIRM_TOKEN, keys, [secretOf(held), String(to), '1', '60000']);
      const counters = () =>
        Promise.all(
          backend.direct.map(
            async (n) =>
              INSPECT.decode(await runScript(n, INSPECT, [...keys, `redlock:queue#0:${resource}`, `redlock:kind:${resource}`], [])).counter,
          ),
        );
      return { holder, held, waiting, handedOver, raise, counters };
    };

    it("hands a freed permit over at one fencing token from every node where the nodes' counters had drifted apart: the releaser's clock in µs, above them", async () => {
      const { held, waiting, handedOver, raise, counters } = await heldWithWaiter('drift');
      // One node's counter raised above the waiter's floor (its clock at its attempt, in µs):
      // that node's counter + 1 would then differ from the others' hand-over tokens.
      const raisedAt = Date.now();
      expect(await raise(0, raisedAt * 1000 + 5)).toBe(1);
      expect(new Set(await counters()).size).toBe(2);
      // Two milliseconds on: the release's floor is then above the raised counter.
      await until(() => Date.now() > raisedAt + 1, 'two milliseconds past the raise');
      const releasedAt = Date.now() * 1000;
      await held.release();
      const lock = await waiting;
      expect(handedOver).toEqual([true]);
      // Every node announced the release's floor (the raised counter + 1 is below it), so no counter needed raising.
      expect(lock.fencingToken).toBeGreaterThanOrEqual(releasedAt);
      await until(async () => (await counters()).every((c) => c === String(lock.fencingToken)), 'every counter at the token');
      await lock.release();
    });

    it("hands a freed permit over with no write-back round when every node handed it over at different tokens: the quorum-th highest, which a quorum stores, above the last permit's", async () => {
      const { holder, held, waiting, handedOver, raise, counters } = await heldWithWaiter('apart');
      // One node's counter far above any floor the release sends (its clock in µs): that node
      // alone then hands the permit over at a higher token than the others.
      const ahead = (Date.now() + 3_600_000) * 1000;
      expect(await raise(0, ahead)).toBe(1);
      await held.release();
      const lock = await waiting;
      expect(handedOver).toEqual([true]);
      expect(lock.fencingToken).toBeGreaterThan(held.fencingToken!);
      expect(lock.fencingToken).toBeLessThan(ahead);
      // Nothing written back: the other nodes keep the token, the one ahead its own.
      const after = (await counters()).map(Number);
      expect(after.slice(1)).toEqual(after.slice(1).map(() => lock.fencingToken));
      expect(after[0]).toBeGreaterThan(ahead);
      await lock.release();
      // The next permit, taken after this one completed, gets a higher token.
      const next = await holder.acquire('apart', 10_000, { limit: 1 });
      expect(next.fencingToken).toBeGreaterThan(lock.fencingToken!);
      await next.release();
    });

    it('gives a waiter the first permit freed, whichever slot it waited for, long before its 5 s retry delay', async () => {
      // Limit 2: the waiter queued for one slot is handed it, or woken to move to the other one.
      for (const freed of [0, 1]) {
        const holder = client();
        const waiter = client({ retryDelay: 5000, retryJitter: 0 });
        const resource = `two:${freed}`;
        const held = [await holder.acquire(resource, 10_000, { limit: 2 }), await holder.acquire(resource, 10_000, { limit: 2 })];
        expect(await refusedNow(client(), resource, { limit: 2 })).toBe(true);
        const waiting = waiter.acquire(resource, 10_000, { limit: 2 });
        await until(async () => (await holder.inspect(resource)).waiters === 1, 'the waiter in the queue');
        const released = performance.now();
        await held[freed]!.release();
        const lock = await waiting;
        expect(performance.now() - released).toBeLessThan(2500);
        expect(lock.fencingToken).toBeGreaterThan(Math.max(...held.map((h) => h.fencingToken!)));
        expect(await refusedNow(client(), resource, { limit: 2 })).toBe(true);
        await Promise.all([lock.release(), held[1 - freed]!.release()]);
      }
    });

    it('names a slot whose queue is at least 3 places shorter to a waiter refused at the back of a long one, and no other', async () => {
      // Slot by slot on one node, as the client sends a slot's acquire: limit 2, both slots held.
      const node = backend.direct[0]!;
      const start = Date.now();
      let n = 0;
      const slot = (i: number, value: string, waiter?: string) =>
        runScript(
          node,
          ACQUIRE,
          [`redlock:lock#${i}:uneven`],
          ACQUIRE.argv({
            value,
            ttl: 10_000,
            prefixLength: 'redlock:'.length,
            limit: 2,
            attempt: 1,
            // Places one ms apart, in the order of the calls.
            fair: { join: waiter === undefined ? undefined : { waiter, since: start + ++n, entryTtl: ENTRY_TTL } },
          }),
        ).then((reply) => ACQUIRE.decode(reply));
      const refused = { taken: false, value: -1 };
      expect((await slot(0, 'h0')).taken).toBe(true);
      expect((await slot(1, 'h1')).taken).toBe(true);
      // Nobody queued for slot 1: the fourth in slot 0's queue (three ahead) is named slot 1, not the first three.
      for (const w of ['c1.a', 'c1.b', 'c1.c']) expect(await slot(0, `v-${w}`, w)).toEqual(refused);
      expect(await slot(0, 'v-d', 'c1.d')).toEqual({ ...refused, free: [1] });
      // Two queue for slot 1, not named slot 0 (its queue is longer); then slot 1's queue puts a
      // newcomer 2 places ahead of its place in slot 0's (4 ahead): not named; the next, 3 places: named.
      for (const w of ['c2.e', 'c2.f']) expect(await slot(1, `v-${w}`, w)).toEqual(refused);
      expect(await slot(0, 'v-g', 'c1.g')).toEqual(refused);
      expect(await slot(0, 'v-h', 'c1.h')).toEqual({ ...refused, free: [1] });
      // A caller that does not queue is named nothing.
      expect(await slot(0, 'v-i')).toEqual(refused);
    });

    it("tries a client's next permit on the slot its last permit of the resource held, not on one drawn at random", async () => {
      const redlock = client();
      // The slot held on node 0, -1 for none (one permit at a time here).
      const slotNow = async () => {
        const ttls = await Promise.all([0, 1, 2, 3].map((i) => backend.direct[0]!.pttl(`redlock:lock#${i}:again`)));
        return ttls.findIndex((ttl) => ttl > 0);
      };
      // A permit is decided at a quorum: node 0 may answer later.
      const heldOn = async () => {
        await until(async () => (await slotNow()) >= 0, 'the permit on node 0');
        return slotNow();
      };
      const first = await redlock.acquire('again', 10_000, { limit: 4 });
      const slot = await heldOn();
      await first.release();
      // Drawn at random, 8 permits in a row on that slot of 4 would be one chance in 65536.
      for (let i = 0; i < 8; i++) {
        await until(async () => (await slotNow()) < 0, 'the last permit released on node 0');
        const permit = await redlock.acquire('again', 10_000, { limit: 4 });
        expect(await heldOn()).toBe(slot);
        await permit.release();
      }
    });

    it('serves waiters in order: a freed permit is reserved for the first waiter, not for whoever asks next', async () => {
      const holder = client();
      const first = client({ retryDelay: 5000, retryJitter: 0 });
      const second = client({ retryDelay: 5000, retryJitter: 0 });
      const held = await holder.acquire('ordered', 10_000, { limit: 1 });
      await settledOnEveryNode('ordered', 1, 0);
      const order: string[] = [];
      const firstWaits = first.acquire('ordered', 10_000, { limit: 1 }).then((l) => (order.push('first'), l));
      await settledOnEveryNode('ordered', 1, 1);
      const secondWaits = second.acquire('ordered', 10_000, { limit: 1 }).then((l) => (order.push('second'), l));
      await settledOnEveryNode('ordered', 1, 2);
      await held.release();
      // The releaser comes straight back: both waiters are ahead of it.
      expect(await refusedNow(holder, 'ordered', { limit: 1 })).toBe(true);
      const a = await firstWaits;
      expect(order).toEqual(['first']);
      await a.release();
      const b = await secondWaits;
      expect(order).toEqual(['first', 'second']);
      await b.release();
    });

    it('keeps a waiter first on every node through attempts admitted by some nodes, refused by another and undone', async () => {
      // Script by script, as attempts reach the nodes. A permit needs (nearly) every
      // node's vote, so the nodes must agree on who is next, also about a waiter
      // that has waited for over a second: a place taken anew is clamped to a
      // second before each node's clock, behind those who came after it.
      const { acquire, release, orders, all, everywhere } = scriptsOf('order');
      // A holder on every node; x, waiting for 5 s already, queues, then y, who started just after x's (clamped) place.
      expect(await Promise.all(all.map((i) => acquire(i, 'h')))).toEqual(everywhere(true));
      const x: Join = { waiter: 'c1.x', since: Date.now() - 5000, entryTtl: ENTRY_TTL };
      expect(await Promise.all(all.map((i) => acquire(i, 'vx', x)))).toEqual(everywhere(false));
      const y: Join = { waiter: 'c2.y', since: Date.now() - 950, entryTtl: ENTRY_TTL };
      expect(await Promise.all(all.map((i) => acquire(i, 'vy', y)))).toEqual(everywhere(false));
      // The holder is gone from all nodes but the last: x's attempt is admitted there and refused by the last, and undone.
      const last = all.length - 1;
      await Promise.all(all.slice(0, last).map((i) => release(i, 'h')));
      const first = await Promise.all(all.map((i) => acquire(i, 'vx', x)));
      expect(first).toEqual([...everywhere(true).slice(0, last), false]);
      await Promise.all(all.slice(0, last).map((i) => release(i, 'vx', { skip: x.waiter })));
      // Past the second after y's place: a place x took anew now would be behind y's.
      await until(() => Date.now() > y.since + 1020, 'a second past y');
      const retry = await Promise.all(all.map((i) => acquire(i, 'vx', x)));
      await Promise.all(all.slice(0, last).map((i) => release(i, 'vx', { skip: x.waiter })));
      expect(await orders()).toEqual(everywhere(['c1.x', 'c2.y']));
      expect(retry).toEqual(first);

      // The last holder goes: x is first everywhere, then y once x leaves in its release; nothing is left queued.
      await release(last, 'h');
      expect(await Promise.all(all.map((i) => acquire(i, 'vx', x)))).toEqual(everywhere(true));
      expect(await Promise.all(all.map((i) => acquire(i, 'vy', y)))).toEqual(everywhere(false));
      await Promise.all(all.map((i) => release(i, 'vx', { leaving: x.waiter })));
      expect(await Promise.all(all.map((i) => acquire(i, 'vy', y)))).toEqual(everywhere(true));
      await Promise.all(all.map((i) => release(i, 'vy', { leaving: y.waiter })));
      expect(await orders()).toEqual(everywhere([]));
    });

    it('counts an undone waiter as waiting again at once on the nodes that admitted it, as the others do', async () => {
      const { acquire, release, all, everywhere } = scriptsOf('gap');
      const last = all.length - 1;
      expect(await acquire(last, 'h')).toBe(true);
      const x: Join = { waiter: 'c1.x', since: Date.now(), entryTtl: ENTRY_TTL };
      expect(await Promise.all(all.map((i) => acquire(i, 'vx', x)))).toEqual([...everywhere(true).slice(0, last), false]);
      await Promise.all(all.slice(0, last).map((i) => release(i, 'vx', { skip: x.waiter })));
      // Until x's retry, a newcomer is behind x on every node: none admits it.
      expect(await Promise.all(all.map((i) => acquire(i, 'vz')))).toEqual(everywhere(false));
    });

    it("a refusal does not push the queue key's expiry back at every attempt (found short, it gets twice the entry's ttl)", async () => {
      // Every refused attempt queues its waiter, keeping three keys' ttl: set to the entry's ttl
      // exactly, a key was short again a moment later, and every refusal sent a PEXPIRE.
      const { acquire } = scriptsOf('expire-once');
      const node = backend.direct[0]!;
      const ttl = () => node.pttl('expire-once:queue');
      const join = (waiter: string): Join => ({ waiter, since: Date.now(), entryTtl: ENTRY_TTL });
      expect(await acquire(0, 'holder')).toBe(true);
      expect(await acquire(0, 'first', join('first'))).toBe(false);
      const set = await ttl();
      expect(set).toBeGreaterThan(ENTRY_TTL);
      await until(async () => (await ttl()) < set, 'the queue key ages');
      const aged = await ttl();
      expect(await acquire(0, 'second', join('second'))).toBe(false);
      const after = await ttl();
      // Not set again, and still long enough for the newest entry.
      expect(after).toBeLessThanOrEqual(aged);
      expect(after).toBeGreaterThanOrEqual(ENTRY_TTL);
    });

    it("a grant does not set the holders' expiry again every time (found short, the set and its kind get twice the ttl), and they outlive the permit", async () => {
      // Reading the longest permit and setting both keys' expiry to it took three calls on every grant.
      const { acquire } = scriptsOf('keep-once');
      const node = backend.direct[0]!;
      const ttl = () => node.pttl('keep-once:lock');
      expect(await acquire(0, 'holder')).toBe(true);
      const set = await ttl();
      expect(set).toBeGreaterThan(10_000);
      expect(Math.abs((await node.pttl('keep-once:kind')) - set)).toBeLessThan(100);
      await until(async () => (await ttl()) < set, 'the holders key ages');
      const aged = await ttl();
      // Granted again (a resent attempt): the key's expiry is not set anew.
      expect(await acquire(0, 'holder')).toBe(true);
      const after = await ttl();
      expect(after).toBeLessThanOrEqual(aged);
      expect(after).toBeGreaterThanOrEqual(10_000);
    });

    it("a short-lived waiter does not cut the life of a longer one's queue entry (the queue keys' ttl only grows)", async () => {
      // The keys hold every waiter's entry: expiring them with the shortest caller's entry
      // ttl wiped a patient waiter's place, so that the release handed the permit to nobody,
      // a newcomer took it, and (read-write) readers were let in past a waiting writer.
      // No retries: the holder never joins the queue, so an entry there is the patient waiter's.
      const holder = client({ retryCount: 0 });
      const patient = client({ retryDelay: 5000, retryJitter: 0 });
      for (const options of [{ limit: 1 }, { mode: 'write' as const }]) {
        const resource = `patient:${options.limit ?? options.mode}`;
        const held = await holder.acquire(resource, 10_000, options.limit ? options : { mode: 'read' });
        const waiting = patient.acquire(resource, 10_000, options);
        await until(() => patient.stats.waiting === 1, 'the patient waiter queued');
        // A semaphore of limit 1 queues in its one slot's queue.
        const queue = options.limit ? `redlock:queue#0:${resource}` : `redlock:queue:${resource}`;
        // Refused at a quorum, it may not be queued on the last nodes yet, nor ever in this
        // attempt on a node its client skipped as hung (a loaded machine): there the hasty
        // caller's entry comes first and sets the keys' ttl alone, as it should. So the ttl
        // is checked where the patient waiter is queued, a majority at least.
        const queuedOn = async () => {
          const queues = await Promise.all(backend.direct.map((n) => n.zrange(queue, 0, -1)));
          return backend.direct.filter((_, i) => queues[i]!.length > 0);
        };
        await until(async () => (await queuedOn()).length > backend.direct.length / 2, 'the patient waiter queued on a majority');
        const patientOn = await queuedOn();
        // Its entry lives about 2 x (5000 + node timeout) + 100 ms; the hasty caller's about 2 x 10 + 2 x node timeout + 100.
        const hasty = client({ retryDelay: 10, retryJitter: 0, retryCount: 1 });
        await expect(hasty.acquire(resource, 10_000, options.limit ? options : { mode: 'read' })).rejects.toBeInstanceOf(ResourceBusyError);
        const ttls = await Promise.all(patientOn.map((n) => n.pttl(queue)));
        for (const ttl of ttls) expect(ttl).toBeGreaterThan(5000);
        await held.release();
        await (await waiting).release();
      }
    });

    it('a waiter that gives up leaves nothing behind: the next caller gets the freed permit at once', async () => {
      const holder = client();
      const quitter = client({ retryDelay: 5000, retryJitter: 0 });
      const held = await holder.acquire('quit', 10_000, { limit: 1 });
      await settledOnEveryNode('quit', 1, 0);
      const controller = new AbortController();
      const quitting = quitter.acquire('quit', 10_000, { limit: 1, signal: controller.signal }).catch((e: unknown) => e);
      await settledOnEveryNode('quit', 1, 1);
      controller.abort();
      expect(await quitting).toMatchObject({ code: 'ABORTED' });
      await held.release();
      // Queued still, the quitter would keep the permit reserved for its entry's life (seconds here).
      await settledOnEveryNode('quit', 0, 0);
      expect(await refusedNow(client(), 'quit', { limit: 1 })).toBe(false);
    });

    it('gives fencing tokens that increase across permits taken one after another, and frees an expired permit', async () => {
      const a = client();
      const b = client({ retryCount: 1000, retryDelay: 20, retryJitter: 0 });
      const first = await a.acquire('fenced-pool', 10_000, { limit: 2 });
      const second = await b.acquire('fenced-pool', 10_000, { limit: 2 });
      expect(second.fencingToken!).toBeGreaterThan(first.fencingToken!);
      await second.release();
      const expiring: Lock = await a.acquire('fenced-pool', 200, { limit: 2 });
      expect(expiring.fencingToken!).toBeGreaterThan(second.fencingToken!);
      expect(await refusedNow(b, 'fenced-pool', { limit: 2 })).toBe(true);
      const lost = new Promise<unknown>((resolve) => expiring.signal.addEventListener('abort', () => resolve(expiring.signal.reason)));
      expect(await lost).toMatchObject({ code: 'LOCK_LOST', reason: 'expired' });
      const next = await b.acquire('fenced-pool', 10_000, { limit: 2 });
      expect(next.fencingToken!).toBeGreaterThan(expiring.fencingToken!);
      await Promise.all([first.release(), next.release()]);
    });

    it('keeps a permit extended through using() for three ttls, and gives it back after', async () => {
      const a = client();
      const b = client();
      const result = await a.using(
        'long',
        400,
        async (lock) => {
          await sleep(1200);
          return { held: lock.isHeld, extensions: lock.extensions, refused: await refusedNow(b, 'long', { limit: 1 }) };
        },
        { limit: 1 },
      );
      expect(result).toMatchObject({ held: true, refused: true });
      expect(result.extensions).toBeGreaterThanOrEqual(2);
      expect(await refusedNow(b, 'long', { limit: 1 })).toBe(false);
    });

    it('refuses to mix kinds on one resource with LockKindMismatchError (LOCK_KIND_MISMATCH), leaving the holder alone', async () => {
      const a = client();
      const permit = await a.acquire('mixed', 10_000, { limit: 2 });
      for (const options of [{}, { limit: 3 }, { mode: 'read' as const }, { mode: 'write' as const }]) {
        const error = await client()
          .acquire('mixed', 10_000, { ...options, retryCount: 2 })
          .catch((e: unknown) => e);
        expect(error).toBeInstanceOf(LockKindMismatchError);
        // Every kind reads the semaphore's marker, with its limit.
        expect(error).toMatchObject({ code: 'LOCK_KIND_MISMATCH', resources: ['mixed'], found: 'semaphore (limit 2)' });
      }
      const mutex = await a.acquire('mutex', 10_000);
      const error = await client()
        .acquire('mutex', 10_000, { limit: 2, retryCount: 2 })
        .catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'LOCK_KIND_MISMATCH', requested: 'semaphore (limit 2)', found: 'mutex' });
      await permit.extend(10_000);
      await mutex.extend(10_000);
      await Promise.all([permit.release(), mutex.release()]);
      // Once the holders are gone, the resource can be used as another kind.
      await (await a.acquire('mixed', 10_000)).release();
    });

    it("keeps the plain protocol's mutex (a bare SET NX, no script) out of a resource used as a semaphore", async () => {
      const permit = await client().acquire('plain-mixed', 10_000, { limit: 2 });
      // No script reads anything for the plain protocol: the semaphore's marker at the lock key refuses it.
      const plain = client({ fencing: false, fairWaiting: false });
      await expect(plain.acquire('plain-mixed', 10_000, { retryCount: 0 })).rejects.toBeInstanceOf(ResourceBusyError);
      await permit.release();
      await (await plain.acquire('plain-mixed', 10_000, { retryCount: 0 })).release();
    });

    it('read-write: readers share, a writer excludes readers and writers', async () => {
      const a = client();
      const b = client();
      const readers = [await a.acquire('doc', 10_000, { mode: 'read' }), await b.acquire('doc', 10_000, { mode: 'read' })];
      expect(await refusedNow(a, 'doc', { mode: 'write' })).toBe(true);
      await Promise.all(readers.map((r) => r.release()));
      const writer = await a.acquire('doc', 10_000, { mode: 'write' });
      // A permit says what it is (a nested LockService.using compares it with what it asks for).
      expect([readers[0]!.mode, writer.mode, writer.limit]).toEqual(['read', 'write', undefined]);
      expect(await refusedNow(b, 'doc', { mode: 'read' })).toBe(true);
      expect(await refusedNow(b, 'doc', { mode: 'write' })).toBe(true);
      await writer.release();
      expect(await refusedNow(b, 'doc', { mode: 'read' })).toBe(false);
    });

    it('read-write: a waiting writer is not starved: readers that come after it wait behind it', async () => {
      const reader = client();
      const writerClient = client({ retryDelay: 5000, retryJitter: 0 });
      const lateReader = client({ retryDelay: 5000, retryJitter: 0 });
      const held = await reader.acquire('catalog', 10_000, { mode: 'read' });
      await settledOnEveryNode('catalog', 1, 0, true);
      const order: string[] = [];
      const writing = writerClient.acquire('catalog', 10_000, { mode: 'write' }).then((l) => (order.push('writer'), l));
      await settledOnEveryNode('catalog', 1, 1, true);
      // A reader now would share with the reader that holds, but the writer queued first.
      expect(await refusedNow(client(), 'catalog', { mode: 'read' })).toBe(true);
      const reading = lateReader.acquire('catalog', 10_000, { mode: 'read' }).then((l) => (order.push('reader'), l));
      await settledOnEveryNode('catalog', 1, 2, true);
      await held.release();
      const writer = await writing;
      expect(order).toEqual(['writer']);
      await writer.release();
      const next = await reading;
      expect(order).toEqual(['writer', 'reader']);
      expect(next.fencingToken!).toBeGreaterThan(writer.fencingToken!);
      expect(writer.fencingToken!).toBeGreaterThan(held.fencingToken!);
      await next.release();
    });

    /** Waits until every node has every permit of `resource` (a permit is decided at its quorum; the last node may be answering). */
    const onEveryNode = (operator: Redlock, resource: string, holders: number) =>
      until(async () => {
        const seen = await operator.inspect(resource);
        return seen.holders.length === holders && seen.holders.every((h) => h.heldOn === 3);
      }, `${holders} holder(s) of ${resource} on every node`);

    /** A lock's holder fingerprint, as the operator tools show it. */
    const holderOf = (lock: Lock) => fingerprint(secretOf(lock));

    it('lists semaphores and read-write locks beside mutexes: kind, limit, every holder with its mode, identity and ttl, token and waiters', async () => {
      const billing = client({ identity: { app: 'billing' } });
      const reports = client({ identity: { app: 'reports' } });
      const operator = client({ nodeTimeout: OPERATOR_NODE_TIMEOUT });
      // The first permit on every node before the second: its acquire returns at a quorum (2 of 3). A second
      // permit's attempt that drew its slot could take it on the third node, not reached yet, raising the
      // counter there before the other two refused it and it was undone; its next attempt then left that
      // node's counter one above the token the other two agreed on (an undo lowers no counter).
      const first = await billing.acquire('pool', 30_000, { limit: 3 });
      await onEveryNode(operator, 'pool', 1);
      const pool = [first, await reports.acquire('pool', 20_000, { limit: 3 })];
      const readers = [await billing.acquire('doc', 30_000, { mode: 'read' }), await reports.acquire('doc', 30_000, { mode: 'read' })];
      const writer = await billing.acquire('rebuild', 30_000, { mode: 'write' });
      const mutex = await billing.acquire('mutex', 30_000);
      await Promise.all([onEveryNode(operator, 'pool', 2), onEveryNode(operator, 'doc', 2), onEveryNode(operator, 'rebuild', 1)]);
      const waiting = operator.acquire('rebuild', 30_000, { mode: 'read', retryCount: 1000, retryDelay: 50 }).catch((e: unknown) => e);
      await until(async () => (await operator.inspect('rebuild')).waiters === 1, 'a reader queued behind the writer');

      const listing = await operator.list('*');
      expect(listing.locks.map((l) => [l.resource, l.kind])).toEqual([
        ['doc', 'rw'],
        ['mutex', 'mutex'],
        ['pool', 'semaphore'],
        ['rebuild', 'rw'],
      ]);
      const [doc, , semaphore, rebuild] = listing.locks;
      // A permit of either kind needs a majority (a semaphore's: of its slot).
      expect(semaphore).toMatchObject({ limit: 3, quorum: 2, held: true, heldOn: 3, waiters: 0 });
      expect(semaphore!.holders).toEqual(
        expect.arrayContaining([
          { holder: holderOf(pool[0]!), identity: { app: 'billing' }, heldOn: 3, held: true, ttl: expect.any(Number) },
          { holder: holderOf(pool[1]!), identity: { app: 'reports' }, heldOn: 3, held: true, ttl: expect.any(Number) },
        ]),
      );
      expect(semaphore!.holders).toHaveLength(2);
      const ttlOf = (h: string) => semaphore!.holders.find((x) => x.holder === h)!.ttl;
      expect(ttlOf(holderOf(pool[0]!))).toBeGreaterThan(20_000);
      expect(ttlOf(holderOf(pool[1]!))).toBeLessThanOrEqual(20_000);
      expect(semaphore!.fencingCounter).toBe(Math.max(pool[0]!.fencingToken!, pool[1]!.fencingToken!));
      expect(doc).toMatchObject({ quorum: 2, held: true, limit: undefined });
      expect(doc!.holders.map((h) => [h.mode, h.identity?.app]).sort()).toEqual([
        ['read', 'billing'],
        ['read', 'reports'],
      ]);
      expect(rebuild).toMatchObject({ held: true, waiters: 1, fencingCounter: writer.fencingToken, holder: holderOf(writer) });
      expect(rebuild!.holders).toEqual([
        { holder: holderOf(writer), identity: { app: 'billing' }, mode: 'write', heldOn: 3, held: true, ttl: expect.any(Number) },
      ]);
      expect(rebuild!.nodes.every((n) => n.kind === 'rw' && n.holders?.[0]?.mode === 'write')).toBe(true);
      // Fingerprints only: no permit's value, in JSON or util.inspect.
      const shown = JSON.stringify(listing) + inspect(listing, { depth: null });
      for (const lock of [...pool, ...readers, writer, mutex]) expect(shown).not.toContain(secretOf(lock).split('.')[0]);
      await Promise.all([...pool, ...readers, writer, mutex].map((l) => l.release()));
      await (await (waiting as Promise<Lock>)).release();
    });

    it('force-releases one permit of a semaphore: named among several, the waiter woken, the counter raised, the evicted holder told, the other kept', async () => {
      const stuckClient = client({ identity: { app: 'stuck' } });
      const operator = client({ nodeTimeout: OPERATOR_NODE_TIMEOUT });
      const stuck = await stuckClient.acquire('slots', 30_000, { limit: 2, autoExtend: true });
      const keeper = await client().acquire('slots', 30_000, { limit: 2 });
      const lost = new Promise<Error>((resolve) => stuck.signal.addEventListener('abort', () => resolve(stuck.signal.reason as Error)));
      await onEveryNode(operator, 'slots', 2);
      const next = operator.acquire('slots', 30_000, { limit: 2, retryCount: 1000, retryDelay: 5000 });
      await until(async () => (await operator.inspect('slots')).waiters === 1, 'the waiter in the queue');
      await until(() => operator.stats.waiting === 1, 'the waiter counted by its client');

      // Several holders: the operator must say which one; nothing is evicted meanwhile.
      const unnamed = await operator.forceRelease('slots').catch((e: unknown) => e);
      expect(unnamed).toBeInstanceOf(InvalidArgumentError);
      expect(unnamed).toMatchObject({ code: 'INVALID_ARGUMENT', argument: 'holder' });
      expect((unnamed as Error).message).toContain(holderOf(stuck));
      expect((unnamed as Error).message).toContain(holderOf(keeper));
      expect(await operator.forceRelease('slots', { holder: '0123456789ab' })).toMatchObject({ releasedOn: 0, otherHolderOn: 3 });
      expect((await operator.inspect('slots')).holders).toHaveLength(2);

      const evicted = performance.now();
      const result = await operator.forceRelease('slots', { holder: holderOf(stuck) });
      expect(result).toMatchObject({
        resource: 'slots',
        kind: 'semaphore',
        releasedOn: 3,
        holder: holderOf(stuck),
        identity: { app: 'stuck' },
      });
      expect(result.fencingToken).toBeGreaterThan(Math.max(stuck.fencingToken!, keeper.fencingToken!));
      // The freed permit goes to the waiter, woken by the eviction well before its 5 s retry.
      const taken = await next;
      expect(performance.now() - evicted).toBeLessThan(4000);
      expect(taken.fencingToken).toBeGreaterThan(result.fencingToken!);
      await expect(stuck.extend()).rejects.toMatchObject({ code: 'LOCK_LOST', reason: 'keys-gone' });
      expect(await lost).toMatchObject({ code: 'LOCK_LOST', reason: 'keys-gone' });
      await expect(keeper.extend()).resolves.toBe(keeper);
      expect((await operator.inspect('slots')).holders.map((h) => h.holder).sort()).toEqual([holderOf(keeper), holderOf(taken)].sort());
      await Promise.all([keeper.release(), taken.release()]);
    });

    it('force-releases the writer of a read-write lock, its only holder, without naming it: every queued reader is let in', async () => {
      const operator = client({ nodeTimeout: OPERATOR_NODE_TIMEOUT });
      const writer = await client().acquire('catalog', 30_000, { mode: 'write' });
      await onEveryNode(operator, 'catalog', 1);
      const readers = [client({ retryDelay: 5000, retryJitter: 0 }), client({ retryDelay: 5000, retryJitter: 0 })];
      const reading = readers.map((r) => r.acquire('catalog', 30_000, { mode: 'read' }));
      await until(async () => (await operator.inspect('catalog')).waiters === 2, 'two readers queued');
      await until(() => readers.every((r) => r.stats.waiting === 1), 'both readers refused once');

      const evicted = performance.now();
      const result = await operator.forceRelease('catalog');
      expect(result).toMatchObject({ kind: 'rw', mode: 'write', releasedOn: 3, holder: holderOf(writer) });
      const [a, b] = await Promise.all(reading);
      // Both woken by the eviction (their retries are 5 s away), and inside together.
      expect(performance.now() - evicted).toBeLessThan(4000);
      expect((await operator.inspect('catalog')).holders.map((h) => h.mode)).toEqual(['read', 'read']);
      await expect(writer.extend()).rejects.toMatchObject({ code: 'LOCK_LOST', reason: 'keys-gone' });
      await Promise.all([a!.release(), b!.release()]);
    });

    it('shows which kind of permit it is wherever a lock is shown (console.log, JSON), and never its value', async () => {
      const a = client();
      const permit = await a.acquire('shown-slots', 5000, { limit: 2 });
      const reader = await a.acquire('shown-catalog', 5000, { mode: 'read' });
      const mutex = await a.acquire('shown-job', 5000);
      expect(JSON.parse(JSON.stringify(permit))).toMatchObject({ resources: ['shown-slots'], limit: 2 });
      expect(JSON.parse(JSON.stringify(reader))).toMatchObject({ resources: ['shown-catalog'], mode: 'read' });
      expect(inspect(permit)).toContain('limit: 2');
      expect(inspect(reader)).toContain("mode: 'read'");
      // A mutex's shape is unchanged: no empty kind fields.
      expect(Object.keys(mutex.toJSON())).toEqual(['id', 'resources', 'validity', 'fencingToken', 'state']);
      for (const lock of [permit, reader, mutex]) {
        const shown = JSON.stringify(lock) + inspect(lock, { depth: null, showHidden: true });
        expect(shown).not.toContain(secretOf(lock));
      }
      await Promise.all([permit, reader, mutex].map((l) => l.release()));
    });

    it('checks limit and mode at the boundary', async () => {
      const a = client();
      for (const options of [{ limit: 0 }, { limit: 1.5 }, { mode: 'exclusive' }, { limit: 2, mode: 'read' }]) {
        await expect(a.acquire('bad', 1000, options as AcquireOptions)).rejects.toBeInstanceOf(InvalidArgumentError);
      }
      await expect(a.acquire(['x', 'y'], 1000, { limit: 2 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    });
  });
}
