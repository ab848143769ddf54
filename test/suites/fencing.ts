/**
 * Fencing tokens over any kind of node: they grow across acquisitions,
 * majorities and clients, a fenced store refuses a stale holder, and a
 * resource's counter outlives its last lock by the retention (README,
 * "Fencing tokens", "Bounded state"). Run by fencing.e2e-spec.ts on ioredis
 * connections and by each client library's spec.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { Redis } from 'ioredis';
import { Redlock, RedisFencedStore, StaleTokenError } from '../../lib/index.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';
import { commandCalls } from '../support/node-stats.js';
import type { NodeKind, OpenedNodes } from '../support/node-kinds.js';
import { until } from '../support/until.js';
import { TEST_NODE_TIMEOUT } from '../support/timeouts.js';

const DAY = 24 * 3600 * 1000;

/** The fencing token of one acquisition of `resource` made while this process's clock reads `aheadBy` ms ahead. */
async function tokenWithClockAhead(redlock: Redlock, resource: string, aheadBy: number): Promise<number> {
  const now = Date.now.bind(Date);
  const clock = jest.spyOn(Date, 'now').mockImplementation(() => now() + aheadBy);
  try {
    const lock = await redlock.acquire(resource, 5000);
    await lock.release();
    return lock.fencingToken!;
  } finally {
    clock.mockRestore();
  }
}

/** Resolves once no node has `key` (lookups expire a key whose time is up). */
const expiredOn = (raw: Redis[], key: string) =>
  until(async () => (await Promise.all(raw.map((r) => r.exists(key)))).every((n) => n === 0), `${key} expired on every node`, 10_000);

export function describeFencing(kind: NodeKind): void {
  describe(`fencing tokens: ${kind.name}`, () => {
    /** Five lock nodes. */
    let fleet: RedisFleet;
    let opened: OpenedNodes;
    /** ioredis connections of the lock nodes, for looking behind the lock clients' back. */
    let raw: Redis[];
    /** The protected resource's own store, a sixth server. */
    let storeFleet: RedisFleet;
    let storeClient: Redis;
    const clients: Redlock[] = [];

    function client(options: Partial<ConstructorParameters<typeof Redlock>[0]> = {}): Redlock {
      const redlock = new Redlock({ nodes: opened.nodes, retryDelay: 10, retryJitter: 20, nodeTimeout: TEST_NODE_TIMEOUT, ...options });
      clients.push(redlock);
      return redlock;
    }
    const expired = (key: string) => expiredOn(raw, key);

    beforeAll(async () => {
      [fleet, storeFleet] = await Promise.all([startFleet(5), startFleet(1)]);
      raw = fleet.urls.map((url) => new Redis(url));
      storeClient = new Redis(storeFleet.urls[0]!);
      opened = await kind.open(fleet);
    });
    afterEach(async () => {
      for (let i = 0; i < fleet.size; i++) if (fleet.nodes[i]!.paused) await fleet.resume(i);
      await Promise.all(clients.splice(0).map((c) => c.close()));
      await Promise.all(raw.map((r) => r.flushall()));
    });
    afterAll(async () => {
      await opened?.close();
      raw?.forEach((r) => r.disconnect());
      storeClient?.disconnect();
      await Promise.all([fleet?.stop(), storeFleet?.stop()]);
    });

    it('grow with every acquisition of a resource', async () => {
      const redlock = client();
      const tokens: number[] = [];
      for (let i = 0; i < 5; i++) {
        const lock = await redlock.acquire('fenced', 5000);
        tokens.push(lock.fencingToken!);
        await lock.release();
      }
      for (let i = 1; i < tokens.length; i++) expect(tokens[i]).toBeGreaterThan(tokens[i - 1]!);
    });

    it('grow across disjoint majorities thanks to the write-back', async () => {
      // Node 0's counter is far ahead; A takes {0,1,2}, then B takes {2,3,4}.
      await raw[0]!.set('redlock:fence:r', String(1e12));
      await Promise.all([1, 2, 3, 4].map((i) => raw[i]!.set('redlock:fence:r', '5')));
      const redlock = client({ retryCount: 0, nodeTimeout: 100 });
      // Every node checked by the restart guard first (ready() waits for a quorum only): a first INFO held
      // up by the pause below would keep node 3 or 4 unverified, out of the second quorum (seen with node-redis).
      await until(async () => (await redlock.ping()).every((n) => n.status === 'up' && !n.excluded), 'every node counted');
      await Promise.all([3, 4].map((i) => fleet.pause(i)));
      const a = await redlock.acquire('r', 5000);
      await a.release();
      await Promise.all([3, 4].map((i) => fleet.resume(i)));
      await Promise.all([0, 1].map((i) => fleet.pause(i)));
      const b = await redlock.acquire('r', 5000);
      expect(b.fencingToken!).toBeGreaterThan(a.fencingToken!);
      await b.release();
    });

    it('cost no extra round trip when the nodes agree, and one to the others when they do not', async () => {
      // A generous node timeout: a loaded machine must not turn a slow answer into a retry.
      const redlock = client({ retryCount: 0, nodeTimeout: 1000 });
      const scripts = () => Promise.all(raw.map((r) => commandCalls(r, 'evalsha')));
      // A release is decided at quorum: the last ones may still be on their way.
      const settled = (total: number) => until(async () => (await scripts()).reduce((a, b) => a + b) === total, `${total} scripts run`);
      // Every command sent so far over the lock connections answered: a PING on each queues behind
      // them. A client library's connections outlive a test here (the suite opens them once), so an
      // earlier test's commands to nodes it paused may still be on their way, and a count from
      // RESETSTAT would take them in (CI, Valkey and GLIDE, once: 'timed out waiting for 10 scripts run').
      const drained = () => until(async () => (await redlock.ping()).every((n) => n.status === 'up'), 'every node answered a ping');
      await drained();
      await (await redlock.acquire('warm', 5000)).release(); // connected, scripts loaded
      await drained();

      await Promise.all(raw.map((r) => r.config('RESETSTAT')));
      await (await redlock.acquire('agree', 5000)).release();
      await settled(10);
      expect(await scripts()).toEqual([2, 2, 2, 2, 2]); // acquire, release: nothing else

      // Counters that drifted apart below the client's clock (nodes that missed
      // acquisitions, or were reborn at other clocks) all rise to that clock in µs:
      // the nodes agree again without a write-back.
      await Promise.all(raw.map((r, i) => r.set('redlock:fence:lagging', String(1e15 + i))));
      await Promise.all(raw.map((r) => r.config('RESETSTAT')));
      const floor = Date.now() * 1000;
      const lagging = await redlock.acquire('lagging', 5000);
      expect(lagging.fencingToken).toBeGreaterThanOrEqual(floor);
      await lagging.release();
      await settled(10);
      expect(await scripts()).toEqual([2, 2, 2, 2, 2]);
      expect(new Set(await Promise.all(raw.map((r) => r.get('redlock:fence:lagging'))))).toEqual(new Set([String(lagging.fencingToken)]));

      // Every node's counter differs, all ahead of the client's clock: whichever nodes
      // make the quorum disagree. The token is the highest among them (any three nodes
      // include node 2, 3 or 4), written back to the others before the lock is handed over.
      await Promise.all(raw.map((r, i) => r.set('redlock:fence:disagree', String(5e15 + 10 * i))));
      await Promise.all(raw.map((r) => r.config('RESETSTAT')));
      const lock = await redlock.acquire('disagree', 5000);
      expect([5e15 + 21, 5e15 + 31, 5e15 + 41]).toContain(lock.fencingToken);
      await lock.release();
      await settled(5 + 4 + 5);
      const counts = await scripts();
      // Acquire, write-back, release; no write-back to the node the token came from.
      expect(counts[(lock.fencingToken! - 5e15 - 1) / 10]).toBe(2);
      expect([...counts].sort()).toEqual([2, 3, 3, 3, 3]);
    });

    it('are off when fencing is disabled', async () => {
      const redlock = client({ fencing: false });
      const lock = await redlock.acquire('plain', 5000);
      expect(lock.fencingToken).toBeUndefined();
      expect(await raw[0]!.exists('redlock:fence:plain')).toBe(0);
      await lock.release();
    });

    it('reject the writes of a holder whose lock ran out while it was paused', async () => {
      const redlock = new Redlock({ nodes: opened.nodes, retryCount: 100, retryDelay: 20 });
      const store = new RedisFencedStore(storeClient, 'paused:');
      try {
        const slow = await redlock.acquire('account', 200);
        await store.set('balance', '100', slow.fencingToken!);
        // The slow holder "pauses" past its ttl; another holder takes over and writes.
        await until(() => !slow.isHeld, 'the slow lock to run out', 1000);
        const next = await redlock.acquire('account', 5000);
        expect(next.fencingToken!).toBeGreaterThan(slow.fencingToken!);
        await store.set('balance', '150', next.fencingToken!);
        // The slow holder wakes up and writes what it computed before its pause.
        await expect(store.set('balance', '90', slow.fencingToken!)).rejects.toBeInstanceOf(StaleTokenError);
        expect(await store.get('balance', next.fencingToken!)).toBe('150');
        await next.release();
      } finally {
        await redlock.close();
      }
    });

    it('refuse the writes of a holder an operator force-released, from the moment the store saw the returned token', async () => {
      const redlock = new Redlock({ nodes: opened.nodes, nodeTimeout: TEST_NODE_TIMEOUT });
      const operator = new Redlock({ nodes: opened.nodes, nodeTimeout: TEST_NODE_TIMEOUT });
      const store = new RedisFencedStore(storeClient, 'evicted:');
      try {
        const stuck = await redlock.acquire('ledger', 30_000);
        await store.set('ledger', 'v1', stuck.fencingToken!);
        const { fencingToken } = await operator.forceRelease('ledger');
        // The operator fences the store before anyone takes the lock again.
        expect(await store.get('ledger', fencingToken!)).toBe('v1');
        await expect(store.set('ledger', 'from-the-evicted-holder', stuck.fencingToken!)).rejects.toBeInstanceOf(StaleTokenError);
        // The next holder's token is above the operator's: its writes pass.
        const next = await operator.acquire('ledger', 5000);
        expect(next.fencingToken!).toBeGreaterThan(fencingToken!);
        await store.set('ledger', 'v2', next.fencingToken!);
        await expect(stuck.extend()).rejects.toMatchObject({ code: 'LOCK_LOST', reason: 'keys-gone' });
        await next.release();
      } finally {
        await Promise.all([redlock.close(), operator.close()]);
      }
    });

    it('keeps a resource counter 24 hours after its last lock by default', async () => {
      const lock = await client({ retryCount: 0 }).acquire('order:1', 5000);
      await lock.release();
      // The acquire and the release are done at a quorum: the last node's may still be on its way.
      const pttls = () => Promise.all(raw.map((r) => r.pttl('redlock:fence:order:1')));
      await until(async () => (await pttls()).every((pttl) => pttl > 0), 'the counter on every node');
      for (const pttl of await pttls()) {
        expect(pttl).toBeLessThanOrEqual(DAY);
        expect(pttl).toBeGreaterThan(DAY - 60_000);
      }
    });

    it('a counter reborn after the retention is above the tokens of a clock that was ahead by less than the retention', async () => {
      // Retention 1 s; the last token came from a clock 0.5 s ahead. The counter
      // expires 1 s after that acquisition, so the next one reads a clock at least
      // 1 s later: its floor, where the counter is reborn, is above the old token.
      const redlock = client({ retryCount: 0, fencingRetention: 1000 });
      const old = await tokenWithClockAhead(redlock, 'order:2', 500);
      await expired('redlock:fence:order:2');
      const lock = await redlock.acquire('order:2', 5000);
      expect(lock.fencingToken!).toBeGreaterThan(old);
      await lock.release();
    });

    it('and below them when that clock was ahead by more than the retention: the skew the retention must cover', async () => {
      const redlock = client({ retryCount: 0, fencingRetention: 1000 });
      const old = await tokenWithClockAhead(redlock, 'order:3', 3600 * 1000);
      await expired('redlock:fence:order:3');
      const lock = await redlock.acquire('order:3', 5000);
      expect(lock.fencingToken!).toBeLessThan(old);
      await lock.release();
    });
  });
}
