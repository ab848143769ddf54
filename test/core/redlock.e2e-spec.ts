import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { firstValueFrom, from, type ObservableInput } from 'rxjs';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  ClientClosedError,
  LockAbortedError,
  LockLostError,
  Redlock,
  ResourceBusyError,
  type Lock,
  type LockEvent,
} from '../../lib/index.js';
import { ACQUIRE, RELEASE } from '../../lib/core/scripts.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';
import { commandCalls, keysLeft, onEveryNode } from '../support/node-stats.js';
import { until } from '../support/until.js';
import { TEST_NODE_TIMEOUT } from '../support/timeouts.js';

let fleet: RedisFleet;
let raw: Redis[];
const clients: Redlock[] = [];

function client(options: Partial<ConstructorParameters<typeof Redlock>[0]> = {}): Redlock {
  const redlock = new Redlock({ nodes: fleet.urls, retryDelay: 10, retryJitter: 20, nodeTimeout: TEST_NODE_TIMEOUT, ...options });
  clients.push(redlock);
  return redlock;
}

/** Keys under the lock namespace on node i. */
async function lockKeys(i: number): Promise<string[]> {
  return (await raw[i]!.keys('redlock:lock:*')).sort();
}

beforeAll(async () => {
  fleet = await startFleet(5);
  raw = fleet.urls.map((url) => new Redis(url));
});

afterEach(async () => {
  // Resume first: closing a connection to a hung node makes ioredis wait 2 s for the socket.
  for (let i = 0; i < 5; i++) {
    if (fleet.nodes[i]!.paused) await fleet.resume(i);
  }
  await Promise.all(clients.splice(0).map((c) => c.close()));
  for (let i = 0; i < 5; i++) {
    if (!fleet.nodes[i]!.running) await fleet.restart(i);
  }
  // Every node runs again: a failed flush would leave this test's keys to the next one.
  await Promise.all(raw.map((r) => r.flushall()));
});

afterAll(async () => {
  raw?.forEach((r) => r.disconnect());
  await fleet?.stop();
});

describe('mutual exclusion', () => {
  it('50 concurrent acquirers of one resource: one holder at a time, read-modify-write count is right', async () => {
    const redlock = client({ retryCount: 10_000, retryDelay: 2, retryJitter: 10 });
    let counter = 0;
    let inside = 0;
    let maxInside = 0;
    await Promise.all(
      Array.from({ length: 50 }, () =>
        redlock.using('counter', 2000, async () => {
          inside++;
          maxInside = Math.max(maxInside, inside);
          const read = counter;
          await sleep(1);
          counter = read + 1;
          inside--;
        }),
      ),
    );
    expect(counter).toBe(50);
    expect(maxInside).toBe(1);
  });

  it('overlapping multi-resource locks exclude each other and leave no partial key', async () => {
    const a = client({ retryCount: 0 });
    const ab = await a.acquire(['a', 'b'], 5000);
    await expect(a.acquire(['b', 'c'], 5000)).rejects.toBeInstanceOf(ResourceBusyError);
    const cd = await a.acquire(['c', 'd'], 5000);
    for (let i = 0; i < 5; i++) {
      expect(await lockKeys(i)).toEqual(['redlock:lock:a', 'redlock:lock:b', 'redlock:lock:c', 'redlock:lock:d']);
    }
    await ab.release();
    await cd.release();

    // Random overlapping sets taken concurrently: no resource ever has two holders.
    const redlock = client({ retryCount: 10_000, retryDelay: 1, retryJitter: 5 });
    const holders = new Map<string, number>();
    let violations = 0;
    await Promise.all(
      Array.from({ length: 30 }, (_, k) => {
        const set = ['r0', 'r1', 'r2', 'r3', 'r4'].filter((_, j) => (k + j) % 3 !== 0);
        // A ttl that outlives the wait for no keys left below: keys gone were released.
        return redlock.using(set, 30_000, async () => {
          for (const r of set) if ((holders.get(r) ?? 0) > 0) violations++;
          for (const r of set) holders.set(r, (holders.get(r) ?? 0) + 1);
          await sleep(1);
          for (const r of set) holders.set(r, holders.get(r)! - 1);
        });
      }),
    );
    expect(violations).toBe(0);
    await until(async () => (await keysLeft(raw, 'redlock:lock:*')).length === 0, 'no key left on any node');
  });
});

describe('lifecycle', () => {
  it('frees itself after its ttl', async () => {
    const redlock = client({ retryCount: 1000, retryDelay: 20, retryJitter: 0 });
    const first = await redlock.acquire('expiring', 300);
    const started = performance.now();
    const validity = first.validity; // what remains, read now: after the wait it is 0
    const second = await redlock.acquire('expiring', 300);
    expect(performance.now() - started).toBeGreaterThanOrEqual(validity); // waited for the expiry
    expect(second.id).not.toBe(first.id);
    await second.release();
  });

  it('release and extend by a non-owner leave the owner keys untouched', async () => {
    const redlock = client({ retryCount: 1000, retryDelay: 20, retryJitter: 0 });
    const values = () => Promise.all(raw.map((r) => r.get('redlock:lock:owned')));
    const stale = await redlock.acquire('owned', 200);
    await until(async () => (await values()).every((v) => v === null), 'the stale lock to expire everywhere');
    const owner = await redlock.acquire('owned', 10_000);
    await until(async () => (await values()).every((v) => v !== null), "the owner's keys on every node");
    const before = await values();
    await expect(stale.extend(10_000)).rejects.toBeInstanceOf(LockLostError);
    await stale.release();
    expect(await values()).toEqual(before);
    await owner.extend(10_000);
    await owner.release();
    await until(() => onEveryNode(raw, 'redlock:lock:owned', false), 'the key gone from every node');
  });

  it('release is idempotent and extend after release is refused', async () => {
    const redlock = client();
    const lock = await redlock.acquire('twice', 5000);
    await lock.release();
    await lock.release();
    await expect(lock.extend()).rejects.toMatchObject({ code: 'LOCK_LOST', reason: 'released' });
  });

  it('validity is below the ttl and accounts for the elapsed time', async () => {
    const redlock = client();
    const ttl = 10_000;
    const before = performance.now();
    const lock = await redlock.acquire('validity', ttl);
    // `validity` is what remains when read: read it once, then measure up to that point.
    const validity = lock.validity;
    const elapsed = performance.now() - before;
    const drift = Math.floor(ttl * 0.01) + 2;
    expect(validity).toBeLessThanOrEqual(ttl - drift);
    expect(validity).toBeGreaterThanOrEqual(Math.floor(ttl - drift - elapsed) - 1);
    await lock.release();
  });

  it('an extension is refused once a majority lost the keys, and the signal fires', async () => {
    const redlock = client();
    const events: LockEvent[] = [];
    redlock.subscribe((e) => events.push(e));
    const lock = await redlock.acquire('gone', 10_000);
    const aborted = new Promise((resolve) => lock.signal.addEventListener('abort', resolve));
    const lostDirect = new Promise<LockLostError>((resolve) => lock.lost$.subscribe(resolve));
    // RxJS interop at run time (the type is the structural `subscribe` one, hence the cast).
    const lostRx = firstValueFrom(from(lock.lost$ as unknown as ObservableInput<LockLostError>));
    // The acquire was decided at quorum: make sure no SET is still in flight before deleting.
    await until(() => onEveryNode(raw, 'redlock:lock:gone'), 'the keys on every node');
    await Promise.all([0, 1, 2].map((i) => raw[i]!.del('redlock:lock:gone')));
    await expect(lock.extend()).rejects.toMatchObject({ code: 'LOCK_LOST', reason: 'keys-gone' });
    await aborted;
    expect(lock.signal.reason).toBeInstanceOf(LockLostError);
    expect(await lostDirect).toBe(lock.signal.reason);
    expect(await lostRx).toBe(lock.signal.reason);
    expect(events.map((e) => e.type)).toContain('lost');
    // Never silently re-acquired: the keys stay gone on the nodes that lost them.
    expect(await raw[0]!.exists('redlock:lock:gone')).toBe(0);
  });

  it('is declared lost when extensions cannot reach a quorum before its validity ends', async () => {
    const redlock = client({ nodeTimeout: 50 });
    const events: LockEvent[] = [];
    redlock.subscribe((e) => events.push(e));
    const lock = await redlock.acquire('unreachable', 400, { autoExtend: true });
    const lost = new Promise<LockLostError>((resolve) => lock.lost$.subscribe(resolve));
    await Promise.all([0, 1, 2].map((i) => fleet.pause(i)));
    const started = performance.now();
    expect((await lost).reason).toBe('expired');
    expect(performance.now() - started).toBeLessThan(400 + 400); // the ttl, plus room for a loaded machine
    expect(lock.signal.aborted).toBe(true);
    expect(events.map((e) => e.type)).toEqual(expect.arrayContaining(['extend-failed', 'lost']));
    await expect(lock.extend()).rejects.toBeInstanceOf(LockLostError);
  });

  it('auto-extension keeps a lock alive past its ttl in using()', async () => {
    const redlock = client({ retryCount: 5 }); // a loaded machine may time out once
    const other = client({ retryCount: 0 });
    let extended = 0;
    redlock.subscribe((e) => {
      if (e.type === 'extended') extended++;
    });
    // A ttl long enough for a loaded 2-core machine to extend in time.
    await redlock.using('long', 700, async (lock: Lock) => {
      // Three ttls of work; the lock must be held all along.
      const end = performance.now() + 2100;
      while (performance.now() < end) {
        await expect(other.acquire('long', 700)).rejects.toBeInstanceOf(ResourceBusyError);
        await sleep(50);
      }
      expect(lock.signal.aborted).toBe(false);
    });
    expect(extended).toBeGreaterThanOrEqual(2);
    // Released at a quorum (3 of 5) when the work ended, long before the last
    // extension's 700 ms run out; the other nodes follow.
    expect((await Promise.all(raw.map((r) => r.exists('redlock:lock:long')))).filter((n) => n === 1).length).toBeLessThanOrEqual(2);
    await until(() => onEveryNode(raw, 'redlock:lock:long', false), 'the key gone from every node');
  });
});

describe('acquire on the wire', () => {
  it('the plain protocol (fencing and fair waiting off) takes one resource with a bare SET NX PX, no script', async () => {
    const redlock = client({ fencing: false, fairWaiting: false });
    await Promise.all(raw.map((r) => r.config('RESETSTAT')));
    await redlock.acquire('warm', 5000).then((l) => l.release()); // connections up
    // Decided at a quorum: wait for the last node's SET (a key already gone can also mean
    // one not set yet) and its release, before counting.
    await until(
      async () => (await Promise.all(raw.map((r) => commandCalls(r, 'set')))).every((n) => n === 1),
      'the warm-up SET on every node',
    );
    await until(() => onEveryNode(raw, 'redlock:lock:warm', false), 'the warm-up released on every node');
    const stats = () => Promise.all(raw.map(async (r) => [await commandCalls(r, 'set'), await commandCalls(r, 'evalsha')]));
    const before = await stats();
    const lock = await redlock.acquire('bare', 5000);
    // Decided at a quorum: the last nodes may answer after acquire() returned.
    await until(() => onEveryNode(raw, 'redlock:lock:bare'), 'the key on every node');
    const after = await stats();
    // One SET on each node that answered the acquire, and no script.
    after.forEach(([set, evalsha], i) => expect([set! - before[i]![0]!, evalsha! - before[i]![1]!]).toEqual([1, 0]));
    await lock.release();
    // Within 1 s, well before the 5 s ttl: released, not expired.
    await until(() => onEveryNode(raw, 'redlock:lock:bare', false), 'no key left', 1000);
  });

  it('ACQUIRE that finds its own value already there (a resent command, a lost undo) sets it again for the full ttl', async () => {
    // The validity counts from this attempt's start: a key left by an earlier attempt must not expire before.
    for (const keys of [['redlock:lock:again'], ['redlock:lock:again:a', 'redlock:lock:again:b']]) {
      for (const key of keys) await raw[0]!.set(key, 'v', 'PX', 100);
      expect(await raw[0]!.eval(ACQUIRE.lua, keys.length, ...keys, 'v', '10000', '')).toEqual([1, 0]);
      for (const key of keys) expect(await raw[0]!.pttl(key)).toBeGreaterThan(9000);
    }
  });

  it("ACQUIRE refused by another holder's key answers -1 without reading that key's ttl (nobody uses it)", async () => {
    for (const keys of [['redlock:lock:held'], ['redlock:lock:held:a', 'redlock:lock:held:b']]) {
      for (const key of keys) await raw[0]!.set(key, 'other', 'PX', 10_000);
      await raw[0]!.config('RESETSTAT');
      expect(await raw[0]!.eval(ACQUIRE.lua, keys.length, ...keys, 'v', '10000', '')).toEqual([0, -1]);
      expect(await commandCalls(raw[0]!, 'pttl')).toBe(0);
    }
  });
});

describe('retries', () => {
  it('stop when the caller aborts, leaving nothing behind', async () => {
    const redlock = client({ retryCount: 1000, retryDelay: 50 });
    const held = await redlock.acquire('abortable', 10_000);
    const controller = new AbortController();
    const waiting = redlock.acquire('abortable', 10_000, { signal: controller.signal }).catch((e: unknown) => e);
    // Aborted while its first round is in flight: it stops before any retry.
    controller.abort();
    expect(await waiting).toBeInstanceOf(LockAbortedError);
    await expect(redlock.acquire('abortable', 10_000, { signal: AbortSignal.abort() })).rejects.toBeInstanceOf(LockAbortedError);
    await held.release();
    await until(() => onEveryNode(raw, 'redlock:lock:abortable', false), 'the key gone from every node');
  });

  it.each([
    ['fair waiting', {}],
    ['fair waiting off', { fairWaiting: false }],
  ])('end at once when the caller aborts or the client closes during the wait between attempts (%s)', async (_, options) => {
    const holder = client({ retryCount: 0 });
    const held = await holder.acquire('paused', 10_000);
    for (const stop of ['abort', 'close'] as const) {
      const redlock = client({ retryCount: 1000, retryDelay: 60_000, retryJitter: 0, ...options });
      const controller = new AbortController();
      const waiting = redlock.acquire('paused', 10_000, { signal: controller.signal }).catch((e: unknown) => e);
      await until(() => redlock.stats.waiting === 1, 'refused once, waiting for the next attempt');
      if (stop === 'abort') controller.abort();
      else void redlock.close();
      // Well before the 60 s retry delay (the test's own timeout).
      expect(await waiting).toBeInstanceOf(stop === 'abort' ? LockAbortedError : ClientClosedError);
    }
    await held.release();
  });

  it('are bounded by acquireTimeout', async () => {
    const redlock = client({ retryCount: 1000, retryDelay: 20 });
    const held = await redlock.acquire('bounded', 10_000);
    const started = performance.now();
    const error = await redlock.acquire('bounded', 10_000, { acquireTimeout: 150 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ResourceBusyError);
    expect(performance.now() - started).toBeLessThan(150 + 100);
    expect((error as ResourceBusyError).attempts.length).toBeGreaterThan(1);
    await held.release();
  });
});

describe('scripts', () => {
  it('run by SHA, and fall back to EVAL when a node lost its script cache', async () => {
    const redlock = client();
    await (await redlock.acquire('cached', 5000)).release();
    await Promise.all(raw.map((r) => r.script('FLUSH')));
    const lock = await redlock.acquire('cached', 5000);
    await lock.release();
    // The fallback cached the script again. The acquire is decided at quorum, so only the
    // nodes that had answered by then are sure to hold it: at least 3 of the 5.
    const cached = await Promise.all(raw.map(async (r) => ((await r.script('EXISTS', ACQUIRE.sha)) as number[])[0]));
    expect(cached.filter((c) => c === 1).length).toBeGreaterThanOrEqual(3);
  });
  it('with the defaults, ACQUIRE and RELEASE are sent the lock key only: the script builds the fence, queue and wake keys', async () => {
    const redlock = client({ retryCount: 0 });
    await redlock.acquire('warm', 5000).then((l) => l.release()); // connections up, scripts loaded
    await until(() => onEveryNode(raw, 'redlock:lock:warm', false), 'the warm-up released on every node');
    const monitor = await raw[0]!.monitor();
    const sent: string[][] = [];
    monitor.on('monitor', (_time: string, args: string[]) => args[0]?.toLowerCase() === 'evalsha' && sent.push(args));
    try {
      const lock = await redlock.acquire('compact', 5000);
      await lock.release();
      await until(() => sent.length === 2, 'the acquire and the release on node 0');
    } finally {
      monitor.disconnect();
    }
    // EVALSHA sha 1 <lock key> <value> <ttl> <queue spec> <prefix length> <retention> <floor>
    expect(sent[0]!.slice(1, 4)).toEqual([ACQUIRE.sha, '1', 'redlock:lock:compact']);
    expect(sent[0]!.slice(5, 8)).toEqual(['5000', '-', '8']);
    expect(sent[0]).toHaveLength(10);
    // EVALSHA sha 1 <lock key> <value> <prefix length>: it never queued
    expect(sent[1]!.slice(1, 4)).toEqual([RELEASE.sha, '1', 'redlock:lock:compact']);
    expect(sent[1]![5]).toBe('8');
    expect(sent[1]).toHaveLength(6);
    // What the script built: the fence counter it raised, under the layout's name.
    expect(await raw[0]!.exists('redlock:fence:compact')).toBe(1);
  });
  it("a prefix of multi-byte characters: the keys the scripts build are the layout's (the prefix length is in bytes)", async () => {
    const redlock = client({ prefix: 'ü-lock:', retryCount: 3, retryDelay: 5000, retryJitter: 0 });
    const lock = await redlock.acquire('x', 5000);
    await until(() => onEveryNode(raw, 'ü-lock:fence:x'), 'the fence counter on every node');
    // A waiter queues under the layout's queue key, and the release wakes it (well before its 5 s retry delay).
    const waiting = redlock.acquire('x', 5000);
    await until(async () => (await raw[0]!.zcard('ü-lock:queue:x')) === 1, 'the waiter queued on node 0');
    const released = performance.now();
    await lock.release();
    const next = await waiting;
    expect(performance.now() - released).toBeLessThan(4000);
    expect(next.fencingToken).toBeGreaterThan(lock.fencingToken!);
    await next.release();
    // A release returns at quorum: node 0 may still hold the queue keys and the hand-overs, named as the layout names them.
    const named = new Set(['lock', 'fence', 'queue', 'queue-deadlines', 'handover'].map((kind) => `ü-lock:${kind}:x`));
    expect((await raw[0]!.keys('*')).filter((key) => !named.has(key))).toEqual([]);
  });
});

describe('batching', () => {
  /** Counts the socket writes of each client (one per syscall batch: `_write` or `_writev`). */
  function countWrites(nodes: Redis[]): number[] {
    const writes = nodes.map(() => 0);
    nodes.forEach((node, i) => {
      const stream = node.stream as unknown as Record<'_write' | '_writev', (...args: unknown[]) => unknown>;
      for (const method of ['_write', '_writev'] as const) {
        const original = stream[method].bind(stream);
        stream[method] = (...args: unknown[]) => {
          writes[i]!++;
          return original(...args);
        };
      }
    });
    return writes;
  }

  /** ioredis clients of every node, connected, and a lock client over them that has locked once. */
  async function warmed(): Promise<{ nodes: Redis[]; redlock: Redlock }> {
    const nodes = fleet.urls.map((url) => new Redis(url));
    await Promise.all(nodes.map((n) => n.ping()));
    const redlock = client({ nodes, retryCount: 0 });
    await (await redlock.acquire('warm', 5000)).release();
    return { nodes, redlock };
  }

  it('an idle acquire is one write per node; 64 concurrent ones share a few', async () => {
    const { nodes, redlock } = await warmed();
    try {
      const writes = countWrites(nodes);

      const one = await redlock.acquire('alone', 5000);
      // The quorum decided; the other nodes' answers may still be on their way.
      await until(() => writes.every((w) => w === 1), 'one write per node');
      expect(writes).toEqual([1, 1, 1, 1, 1]);
      await one.release();
      await until(() => writes.every((w) => w === 2), 'the release written');

      const locks = await Promise.all(Array.from({ length: 64 }, (_, i) => redlock.acquire(`many:${i}`, 5000)));
      await Promise.all(locks.map((l) => l.release()));
      // Within 2 s, well before the 5 s ttl: released, not expired.
      await until(async () => (await keysLeft(raw, 'redlock:lock:many:*')).length === 0, 'no key left on any node', 2000);
      // 128 scripts per node (64 acquires, 64 releases): a burst's commands to a node share a write.
      for (const w of writes) expect(w - 2).toBeLessThanOrEqual(8);
    } finally {
      nodes.forEach((n) => n.disconnect());
    }
  });

  it('the commands of one tick to an idle node share one write, the first one included', async () => {
    const { nodes, redlock } = await warmed();
    try {
      await until(() => nodes.every((n) => n.stream.writableLength === 0), 'nothing left to write');
      const writes = countWrites(nodes);
      // Two locks asked for in one tick, on nodes with nothing in flight.
      const locks = await Promise.all([redlock.acquire('tick:a', 5000), redlock.acquire('tick:b', 5000)]);
      await until(() => writes.every((w) => w >= 1), 'a write to every node');
      expect(writes).toEqual(nodes.map(() => 1));
      await Promise.all(locks.map((lock) => lock.release()));
    } finally {
      nodes.forEach((n) => n.disconnect());
    }
  });
});

describe('restart guard', () => {
  it('does not count a node that restarted without its data inside the window', async () => {
    const uptime = async (i: number) => Number(/uptime_in_seconds:(\d+)/.exec(await raw[i]!.info('server'))![1]);
    // The window must outlast every step from node 2's restart to the last acquire below: with
    // 1 s, a loaded run (KeyDB, two CPU hogs) once got longLived's acquire counted on node 2.
    const window = 5000;
    // Nodes that have run for longer than the window count (uptime is in whole seconds, see below).
    const older = async () => (await Promise.all([0, 1, 3, 4].map(uptime))).every((s) => s > window / 1000);
    await until(older, 'nodes older than the window', window + 3000, 100);
    const holder = client({ retryCount: 0 });
    const longLived = client({ retryCount: 0, restartGuard: window });
    await longLived.ready();
    const a = await holder.acquire('guarded', 10_000);
    await until(() => onEveryNode(raw, 'redlock:lock:guarded'), 'the keys everywhere');
    // A holds {0, 1, 2} only; then node 2 crashes and comes back empty.
    await Promise.all([3, 4].map((i) => raw[i]!.del('redlock:lock:guarded')));
    await fleet.kill(2);
    await fleet.restart(2);
    // Redis's uptime is whole seconds between two second clocks: it says 1 from the first
    // wall-clock second boundary on, however young the server. Checked at that point,
    // the node is well inside the window and must not be counted.
    await until(async () => (await uptime(2)) >= 1, 'node 2 reporting 1 s of uptime', 2000, 5);

    const fresh = client({ retryCount: 0, restartGuard: window });
    const events: LockEvent[] = [];
    fresh.subscribe((e) => events.push(e));
    const refused = await fresh.acquire('guarded', 10_000).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ResourceBusyError);
    expect((refused as ResourceBusyError).attempts[0]!.nodes[2]!.outcome).toBe('excluded');
    expect(events.some((e) => e.type === 'node-restarted')).toBe(true);
    // A client that was connected before the restart notices the new run id.
    await expect(longLived.acquire('guarded', 10_000)).rejects.toBeInstanceOf(ResourceBusyError);

    // Without the guard the same acquisition succeeds: two holders at once.
    const unguarded = client({ retryCount: 0, restartGuard: 0 });
    const b = await unguarded.acquire('guarded', 10_000);
    expect(a.isHeld && b.isHeld).toBe(true);
    await Promise.all([a.release(), b.release()]);
  });
});

describe('restart guard by default (issue 18.16)', () => {
  it('counts freshly started nodes at once, and keeps a node it saw restart empty out for the longest ttl it used', async () => {
    const holder = client({ retryCount: 0 });
    const watcher = client({ retryCount: 0 }); // defaults: restartGuard 'auto'
    await watcher.ready();
    // Cold start: the fleet's nodes are young, yet counted (no restart was seen).
    const a = await holder.acquire('amnesia', 10_000);
    await until(() => onEveryNode(raw, 'redlock:lock:amnesia'), 'the keys everywhere');
    await watcher.acquire('other', 10_000).then((l) => l.release()); // the watcher has used a 10 s ttl
    // A holds {0, 1, 2} only; node 2 crashes and comes back empty while the watcher is connected.
    await Promise.all([3, 4].map((i) => raw[i]!.del('redlock:lock:amnesia')));
    const events: LockEvent[] = [];
    watcher.subscribe((e) => events.push(e));
    // Node 2's run id read first: a node whose first INFO had not answered never voted, and is not reported restarted.
    await until(async () => (await watcher.ping()).every((n) => n.status === 'up'), 'every node verified');
    await fleet.kill(2);
    await fleet.restart(2);
    await until(() => events.some((e) => e.type === 'node-restarted'), 'the restart seen');
    expect(events.find((e) => e.type === 'node-restarted')).toMatchObject({ excludedFor: expect.any(Number) });
    expect((events.find((e) => e.type === 'node-restarted') as { excludedFor: number }).excludedFor).toBeGreaterThan(8000);
    const refused = await watcher.acquire('amnesia', 10_000).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ResourceBusyError);
    expect(a.isHeld).toBe(true);
    await a.release();
  });
});

describe('failed attempts', () => {
  it('leave no key on any node', async () => {
    // Another holder has "b" on nodes 0-2: a lock on [a, b] can only take nodes 3-4, then undoes them.
    await Promise.all([0, 1, 2].map((i) => raw[i]!.set('redlock:lock:b', 'someone-else', 'PX', 10_000)));
    const redlock = client({ retryCount: 2 });
    await expect(redlock.acquire(['a', 'b'], 5000)).rejects.toBeInstanceOf(ResourceBusyError);
    for (let i = 0; i < 5; i++) {
      expect(await raw[i]!.exists('redlock:lock:a')).toBe(0);
      expect(await raw[i]!.get('redlock:lock:b')).toBe(i < 3 ? 'someone-else' : null);
    }
  });
});
