import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { QUICK_CLOSE } from '../support/other-ioredis.js';
import { inspect } from 'node:util';
import { InvalidArgumentError, LockAbortedError, MemoryFencedStore, Redlock, type Lock, type LockEvent } from '../../lib/index.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';
import { onEveryNode } from '../support/node-stats.js';
import { until } from '../support/until.js';
import { TEST_NODE_TIMEOUT } from '../support/timeouts.js';
import { TcpProxy } from '../faults/tcp-proxy.js';
import { ACQUIRE, RELEASE } from '../../lib/core/scripts.js';

let fleet: RedisFleet;
let raw: Redis[];
const clients: Redlock[] = [];

function client(options: Partial<ConstructorParameters<typeof Redlock>[0]> = {}): Redlock {
  const redlock = new Redlock({ nodes: fleet.urls, nodeTimeout: TEST_NODE_TIMEOUT, retryDelay: 10, retryJitter: 10, ...options });
  clients.push(redlock);
  return redlock;
}

/** A promise and the function that resolves it. */
function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** Runs `test` with an ioredis client of node `index` through a proxy that delays each way by 100 ms. */
async function throughSlowProxy(index: number, test: (slow: Redis) => Promise<void>): Promise<void> {
  const proxy = await TcpProxy.latency(fleet.nodes[index]!.port, 100, 100);
  const slow = new Redis(`redis://127.0.0.1:${proxy.port}`);
  try {
    await test(slow);
  } finally {
    slow.disconnect();
    await proxy.stop();
  }
}

beforeAll(async () => {
  fleet = await startFleet(3);
  raw = fleet.urls.map((u) => new Redis(u));
});
afterEach(async () => {
  for (let i = 0; i < 3; i++) if (fleet.nodes[i]!.paused) await fleet.resume(i);
  await Promise.all(clients.splice(0).map((c) => c.close({ grace: 0 })));
  await Promise.all(raw.map((r) => r.flushall()));
});
afterAll(async () => {
  raw?.forEach((r) => r.disconnect());
  await fleet?.stop();
});

describe('shutdown with work under way (issue 18.2)', () => {
  it('close() waits for a running using() routine and keeps extending its lock meanwhile', async () => {
    const events: LockEvent[] = [];
    const app = client({ onEvent: (e) => events.push(e) });
    const other = client({ retryCount: 0 });
    const inside = deferred();
    const finish = deferred();
    const running = app.using('job', 300, async (lock) => {
      inside.resolve();
      await finish.promise;
      return lock.signal.aborted;
    });
    await inside.promise;
    const closing = app.close();
    const extendedBefore = events.filter((e) => e.type === 'extended').length;
    // Several ttls of the lock pass while the routine runs: it is extended, and held.
    await until(() => events.filter((e) => e.type === 'extended').length >= extendedBefore + 3, 'three extensions after close()');
    await expect(other.acquire('job', 1000)).rejects.toMatchObject({ code: 'RESOURCE_BUSY' });
    finish.resolve();
    expect(await running).toBe(false); // its signal never fired
    await closing;
    expect(events.some((e) => e.type === 'lost')).toBe(false);
    await until(() => onEveryNode(raw, 'redlock:lock:job', false), 'the keys released');
  });

  it('past the grace period, marks the lock lost (signal, lost event) before deleting its keys', async () => {
    const events: LockEvent[] = [];
    const app = client({ shutdownGrace: 50, onEvent: (e) => events.push(e) });
    const inside = deferred<Lock>();
    const running = app.using('stuck', 5000, async (lock) => {
      inside.resolve(lock);
      await new Promise((resolve) => lock.signal.addEventListener('abort', resolve));
      return lock.signal.reason as Error;
    });
    const lock = await inside.promise;
    await app.close();
    expect(lock.signal.aborted).toBe(true);
    expect(await running).toMatchObject({ code: 'LOCK_LOST', reason: 'shutdown' });
    expect(events.filter((e) => e.type === 'lost')).toEqual([expect.objectContaining({ reason: 'shutdown', lockId: lock.id })]);
    expect(events.some((e) => e.type === 'released' && e.lockId === lock.id)).toBe(false);
    await until(() => onEveryNode(raw, 'redlock:lock:stuck', false), 'the keys deleted', 1000);
  });
});

describe('close() with acquires under way (issue 18.4)', () => {
  it('rejects a waiting acquire with ClientClosedError, leaves nothing on the nodes and opens nothing after', async () => {
    const holder = client({ retryCount: 0, fairWaiting: false });
    const held = await holder.acquire('busy', 10_000);
    // Its calls do not wait by default: no wake channel up front; this one waits by its own options.
    const waiter = client({ retryCount: 0 });
    const waiting = waiter.acquire('busy', 10_000, { retryCount: 1000, retryDelay: 50 });
    await until(async () => (await raw[0]!.zcard('redlock:queue:busy')) === 1, 'the waiter queued');
    const closing = waiter.close();
    await expect(waiting).rejects.toMatchObject({ code: 'CLIENT_CLOSED', name: 'ClientClosedError' });
    await closing;
    await until(async () => (await raw[0]!.zcard('redlock:queue:busy')) === 0, 'the waiter gone from the queue');
    // No wake channel stays subscribed on any node: the closed client holds no connection. A node
    // drops a subscription when it reads the closed socket, which can come after close() resolves.
    const channels = async () => (await Promise.all(raw.map((r) => r.pubsub('CHANNELS', 'redlock:wake:*')))).flat();
    await until(async () => (await channels()).length === 0, 'no wake channel subscribed');
    // An acquire after close() (a queue worker still fetching jobs during shutdown) is refused alike.
    await expect(waiter.acquire('other', 1000)).rejects.toMatchObject({
      code: 'CLIENT_CLOSED',
      name: 'ClientClosedError',
      resources: ['other'],
    });
    await held.release();
  });

  it('an acquire whose round is in flight at close() hands out no lock and undoes its keys', async () => {
    const redlock = client({ retryCount: 0 });
    await redlock.ready();
    const acquiring = redlock.acquire('in-flight', 10_000);
    const closing = redlock.close();
    await expect(acquiring).rejects.toMatchObject({ code: 'CLIENT_CLOSED', name: 'ClientClosedError' });
    await closing;
    expect(await onEveryNode(raw, 'redlock:lock:in-flight', false)).toBe(true);
  });
});

describe('a hung majority at startup (issue 18.5)', () => {
  it('bounds the first acquire by acquireTimeout, by its signal, and by close()', async () => {
    await Promise.all([fleet.pause(1), fleet.pause(2)]); // accept TCP, never answer
    const byTimeout = client({ retryCount: 5, acquireTimeout: 300 });
    const t0 = performance.now();
    await expect(byTimeout.acquire('hung', 5000)).rejects.toMatchObject({ code: 'QUORUM_UNREACHABLE' });
    expect(performance.now() - t0).toBeLessThan(5000); // it waited 10 s and more before

    const bySignal = client();
    const controller = new AbortController();
    const aborted = bySignal.acquire('hung', 5000, { signal: controller.signal });
    controller.abort();
    await expect(aborted).rejects.toBeInstanceOf(LockAbortedError);

    const byClose = client();
    const closed = byClose.acquire('hung', 5000);
    await byClose.close();
    await expect(closed).rejects.toMatchObject({ code: 'CLIENT_CLOSED', name: 'ClientClosedError' });
    await byClose.ready(); // settled, not pending forever
  });
});

describe('a lost lock (issue 18.6)', () => {
  it('release() still deletes its keys, which a late extension may have kept', async () => {
    const redlock = client();
    const lock = await redlock.acquire('late', 200);
    await until(() => onEveryNode(raw, 'redlock:lock:late'), 'the keys');
    const value = (await raw[0]!.get('redlock:lock:late'))!;
    const lost = new Promise((resolve) => lock.signal.addEventListener('abort', resolve));
    await lost;
    expect(lock.isLost).toBe(true);
    // An extension that reached the nodes after the client gave the lock up.
    await Promise.all(raw.map((r) => r.set('redlock:lock:late', value, 'PX', 60_000)));
    await lock.release();
    await until(() => onEveryNode(raw, 'redlock:lock:late', false), 'the keys deleted', 1000);
  });
});

describe('timers and bookkeeping (issues 18.10, 18.11)', () => {
  it('refuses delays Node timers cannot keep, and a threshold that would extend in a loop', () => {
    const nodes = fleet.urls;
    for (const option of ['retryDelay', 'nodeTimeout', 'acquireTimeout', 'restartGuard', 'shutdownGrace']) {
      expect(() => new Redlock({ nodes, [option]: 2 ** 31 })).toThrow(InvalidArgumentError);
    }
    expect(() => new Redlock({ nodes, autoExtend: { threshold: 0.99 } })).toThrow(/threshold/);
  });

  it('a lock with a ttl beyond 2^31-1 ms is not extended in a loop', async () => {
    const events: LockEvent[] = [];
    const redlock = client({ onEvent: (e) => events.push(e) });
    const lock = await redlock.acquire('months', 60 * 24 * 3600 * 1000, { autoExtend: true });
    void lock.signal; // armed
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(lock.isHeld).toBe(true);
    expect(events.filter((e) => e.type === 'extended')).toEqual([]);
    await lock.release();
  });

  it('forgets locks left to expire, so close() drops only the live ones', async () => {
    const events: LockEvent[] = [];
    const redlock = client({ onEvent: (e) => events.push(e) });
    const expired = await Promise.all(Array.from({ length: 100 }, (_, i) => redlock.acquire(`short:${i}`, 300)));
    // Their keys expired on every node (reading the locks themselves would declare them lost). Every node:
    // under load one node may have been passed over as hung, and never had the keys to expire.
    await until(
      async () => (await Promise.all(raw.map((node) => node.keys('redlock:lock:short:*')))).every((keys) => keys.length === 0),
      'the keys expired',
    );
    expect(expired.length).toBe(100);
    // New locks sweep the expired ones out: the client keeps a bounded number, not every lock ever taken.
    const live: Lock[] = [];
    for (let i = 0; i < 30; i++) live.push(await redlock.acquire(`live:${i}`, 10_000));
    const kept = Number(/held: (\d+)/.exec(inspect(redlock))![1]);
    expect(kept).toBeLessThan(64);
    await redlock.close();
    // Only the live locks are dropped (marked lost, then deleted): nothing is sent for the expired ones.
    const dropped = events.filter((e) => e.type === 'lost').map((e) => (e as { lockId: string }).lockId);
    expect(events.filter((e) => e.type === 'lost').every((e) => (e as { reason: string }).reason === 'shutdown')).toBe(true);
    expect(dropped.sort()).toEqual(live.map((l) => l.id).sort());
  });
});

describe('typed errors at the boundary (issue 18.13)', () => {
  it.each([
    ['null options', null],
    ['a signal that is not an AbortSignal', { signal: {} }],
    ["autoExtend: 'yes'", { autoExtend: 'yes' }],
  ])('acquire rejects %s with InvalidArgumentError', async (_label, options) => {
    const redlock = client();
    await expect(redlock.acquire('x', 1000, options as never)).rejects.toBeInstanceOf(InvalidArgumentError);
  });

  it('MemoryFencedStore refuses a missing or NaN token', async () => {
    const store = new MemoryFencedStore();
    await expect(store.set('k', 'v', undefined as never)).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(store.set('k', 'v', Number.NaN)).rejects.toBeInstanceOf(InvalidArgumentError);
  });
});

describe('a paused holder (issue 18.15)', () => {
  it('sees its lock lost the moment it looks after a pause longer than the validity', async () => {
    const redlock = client();
    const lock = await redlock.acquire('paused', 100);
    void lock.signal; // armed, as a holder that passes it on does
    // The process stalls (GC, SIGSTOP) past the ttl: no timer runs meanwhile.
    const until = performance.now() + 150;
    while (performance.now() < until);
    // The first thing the holder does after the pause: look at its lock.
    expect(lock.signal.aborted).toBe(true);
    expect(() => lock.assertHeld()).toThrow(expect.objectContaining({ code: 'LOCK_LOST', reason: 'expired' }));
  });
});

describe('node failures and odd replies (issues 18.7, 18.13)', () => {
  it('a write that throws fails that command only: the node is not left counted as hung', async () => {
    const own = fleet.urls.map((url) => new Redis(url));
    try {
      // Not about the restart guard: a node whose INFO check is still on its way right after
      // start-up counts as excluded, which with node 0 failing on purpose would leave no quorum.
      const redlock = client({ nodes: own, retryCount: 0, restartGuard: 0 });
      await redlock.acquire('warm', 5000).then((l) => l.release());
      const evalsha = own[0]!.evalsha.bind(own[0]!);
      own[0]!.evalsha = (() => {
        throw new Error('cannot encode');
      }) as never;
      const lock = await redlock.acquire('one-throws', 5000); // 2 of 3 still make a quorum
      await lock.release();
      own[0]!.evalsha = evalsha;
      expect((await redlock.ping()).map((n) => n.status)).toEqual(['up', 'up', 'up']);
      await Promise.all([fleet.pause(1), fleet.pause(2)]);
      await expect(redlock.acquire('needs-0', 5000)).rejects.toMatchObject({ code: 'QUORUM_UNREACHABLE' });
      expect((await redlock.ping(100))[0]!.status).toBe('up'); // node 0 counts: nothing of the throw is left
      await redlock.close();
    } finally {
      own.forEach((c) => c.disconnect());
    }
  });

  it('words error replies (out of memory) as errors, not as nodes that did not answer in time', async () => {
    await Promise.all(raw.map((r) => r.config('SET', 'maxmemory', '1')));
    try {
      const redlock = client({ retryCount: 0 });
      const error = (await redlock.acquire('oom', 5000).catch((e: unknown) => e)) as Error;
      expect(error).toMatchObject({ code: 'QUORUM_UNREACHABLE' });
      expect(error.message).not.toMatch(/did not answer in time/);
      expect(error.message).toMatch(/errors/);
      expect(error.message).toMatch(/OOM/);
    } finally {
      await Promise.all(raw.map((r) => r.config('SET', 'maxmemory', '0')));
    }
  });
});

describe('a split vote (issue 18.17)', () => {
  it('is retried briefly even with retryCount 0, so that one contender gets through', async () => {
    // 5 nodes, 2 of them down: 3 replicas firing one cron tick each took one node.
    const five = await startFleet(5);
    const fiveRaw = five.urls.map((u) => new Redis(u, QUICK_CLOSE));
    const own = five.urls.map((url) => new Redis(url, { enableOfflineQueue: false, ...QUICK_CLOSE }));
    try {
      await Promise.all([five.kill(3), five.kill(4)]);
      await fiveRaw[0]!.set('redlock:lock:tick', 'replica-b', 'PX', 10_000);
      await fiveRaw[1]!.set('redlock:lock:tick', 'replica-c', 'PX', 10_000);
      // The other two give up after this client's first attempt, as they would: their undo.
      const evalsha = own[2]!.evalsha.bind(own[2]!) as (...args: unknown[]) => Promise<unknown>;
      let undone = false;
      own[2]!.evalsha = ((...args: unknown[]) =>
        evalsha(...args).then(async (reply) => {
          if (!undone) {
            undone = true;
            await Promise.all([fiveRaw[0]!.del('redlock:lock:tick'), fiveRaw[1]!.del('redlock:lock:tick')]);
          }
          return reply;
        })) as never;
      const redlock = client({ nodes: own, retryCount: 0 });
      const lock = await redlock.acquire('tick', 5000);
      expect(lock.attempts).toBeGreaterThan(1);
      await lock.release();
      await redlock.close({ grace: 0 });
    } finally {
      own.forEach((c) => c.disconnect());
      fiveRaw.forEach((c) => c.disconnect());
      await five.stop();
    }
  });

  it('a resource held on a quorum of nodes is busy at once with retryCount 0, without split retries', async () => {
    const holder = client({ retryCount: 0 });
    const held = await holder.acquire('held', 5000);
    const other = client({ retryCount: 0 });
    const error = await other.acquire('held', 5000).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'RESOURCE_BUSY', splitVote: false, attempts: [expect.anything()] });
    await held.release();
  });
});

describe('after a SCRIPT FLUSH (issue 18.12)', () => {
  it('an acquire whose NOSCRIPT comes back after the node timeout sends no late EVAL to overtake its undo', async () => {
    // Node 0 is 100 ms away each way; the node timeout is 50 ms.
    await throughSlowProxy(0, async (slow) => {
      const redlock = client({ nodes: [slow, fleet.urls[1]!, fleet.urls[2]!], nodeTimeout: 50, retryCount: 0 });
      await redlock.ready();
      // Node 0 lost its scripts (SCRIPT FLUSH, a restart) but has the release script again (another lock's fallback).
      await raw[0]!.script('FLUSH');
      await raw[0]!.script('LOAD', RELEASE.lua);
      // Held elsewhere on nodes 1 and 2: the attempt fails, and its undo goes to node 0, which timed out.
      await Promise.all([1, 2].map((i) => raw[i]!.set('redlock:lock:noscript', 'someone-else', 'PX', 10_000)));
      const evals: unknown[] = [];
      const evalOf = slow.eval.bind(slow) as (...args: unknown[]) => Promise<unknown>;
      slow.eval = ((...args: unknown[]) => (evals.push(args[0]), evalOf(...args))) as never;
      const evalshaOf = slow.evalsha.bind(slow) as (...args: unknown[]) => Promise<unknown>;
      let noscript: Promise<unknown> | undefined;
      slow.evalsha = ((...args: unknown[]) => {
        const reply = evalshaOf(...args);
        noscript ??= reply.catch(() => undefined);
        return reply;
      }) as never;
      await expect(redlock.acquire('noscript', 5000)).rejects.toMatchObject({ code: 'RESOURCE_BUSY' });
      await noscript; // the acquire's NOSCRIPT is back (long after the 50 ms node timeout)
      await new Promise((resolve) => setImmediate(resolve)); // its handler has run
      expect(evals).toEqual([]); // no late acquire script that would set a key nobody holds
    });
  });
});

describe('a node that lost its scripts and answers later than the node timeout', () => {
  it('gets them loaded again after its late NOSCRIPT, instead of answering NOSCRIPT until one comes in time', async () => {
    // Node 0 is 100 ms away each way; the node timeout is 50 ms: every answer of its is late.
    const acquireLoaded = async () => ((await raw[0]!.script('EXISTS', ACQUIRE.sha)) as number[])[0] === 1;
    await throughSlowProxy(0, async (slow) => {
      const redlock = client({ nodes: [slow, fleet.urls[1]!, fleet.urls[2]!], nodeTimeout: 50, retryCount: 0 });
      await until(acquireLoaded, 'the scripts loaded on node 0 when it connected');
      await raw[0]!.script('FLUSH'); // lost (a restart the connection did not see, a flush)
      const lock = await redlock.acquire('reloaded', 5000); // held on nodes 1 and 2; node 0's NOSCRIPT comes late
      // No EVAL went with the late NOSCRIPT: the acquire script is there again only if it was loaded for it.
      await until(acquireLoaded, 'the acquire script on node 0 again');
      await lock.release();
    });
  });
});

describe('a node that refuses an acquire after the round was decided', () => {
  it('has the holder leave its queue there in the release, so that its own release does not hand it the freed key', async () => {
    // Node 2 answers 200 ms after the others.
    await throughSlowProxy(2, async (slow) => {
      // Another value on node 2 (a failed attempt's key whose undo is still to come): it refuses.
      await raw[2]!.set('redlock:lock:late-refusal', 'someone-else', 'PX', 10_000);
      const redlock = client({ nodes: [fleet.urls[0]!, fleet.urls[1]!, slow], nodeTimeout: 2000, retryDelay: 5000 });
      await redlock.ready();
      const lock = await redlock.acquire('late-refusal', 10_000); // decided on nodes 0 and 1
      // Node 2's refusal came after the decision, and queued the caller there (for 2 x (5000 + 2000) + 100 ms).
      await until(async () => (await raw[2]!.zcard('redlock:queue:late-refusal')) === 1, 'queued on node 2');
      await lock.release();
      await until(async () => (await raw[2]!.zcard('redlock:queue:late-refusal')) === 0, 'the holder gone from the queue of node 2', 2000);
    });
  });
});

describe('a waiter that gives up (issue 18.12)', () => {
  it('leaves the queue of a node that looked hung, instead of keeping its reservation there until the entry expires', async () => {
    // Node 0: slower than the node timeout.
    await throughSlowProxy(0, async (slow) => {
      const holder = client({ retryCount: 0 });
      const held = await holder.acquire('queued', 10_000);
      // Its queue entries live 2 x (5000 + 50) + 100 ms: a leave that never came would show for 10 s.
      const waiter = client({ nodes: [slow, fleet.urls[1]!, fleet.urls[2]!], nodeTimeout: 50, retryDelay: 5000, retryJitter: 0 });
      await waiter.ready();
      const controller = new AbortController();
      const waiting = waiter.acquire('queued', 10_000, { signal: controller.signal });
      await until(async () => (await raw[0]!.zcard('redlock:queue:queued')) === 1, 'the waiter queued on node 0');
      controller.abort(); // gives up while its commands to node 0 are still unanswered
      await expect(waiting).rejects.toMatchObject({ code: 'ABORTED' });
      await until(async () => (await raw[0]!.zcard('redlock:queue:queued')) === 0, 'the waiter gone from node 0', 3000);
      await held.release();
    });
  });
});

describe('a waiter whose host clock is far behind (issue 18.12)', () => {
  it('queues within a second of the node clock, not a minute ahead of every other waiter', async () => {
    const holder = client({ retryCount: 0 });
    const held = await holder.acquire('skew', 10_000);
    const skewed = client({ retryDelay: 5000, retryJitter: 0 });
    const realNow = Date.now;
    Date.now = () => realNow() - 60_000; // this host's clock: 60 s behind (read when the call begins)
    const controller = new AbortController();
    let waiting: Promise<unknown>;
    try {
      waiting = skewed.acquire('skew', 10_000, { signal: controller.signal }).catch((e: unknown) => e);
    } finally {
      Date.now = realNow;
    }
    await until(async () => (await raw[0]!.zcard('redlock:queue:skew')) === 1, 'the waiter queued');
    const [, score] = await raw[0]!.zrange('redlock:queue:skew', '0', '0', 'WITHSCORES');
    const [seconds, micros] = await raw[0]!.time();
    const nodeNow = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    // At most a second ahead of the node's clock when it queued (which was before nodeNow).
    expect(Number(score)).toBeGreaterThan(nodeNow - 1000 - 5000);
    expect(Number(score)).toBeLessThanOrEqual(nodeNow + 1000);
    controller.abort();
    await waiting!;
    await held.release();
  });
});

describe("the application's own clients (issue 18.11)", () => {
  it('carry no listener of the lock client after close()', async () => {
    const own = fleet.urls.map((url) => new Redis(url));
    try {
      await until(() => own.every((c) => c.status === 'ready'), 'the clients connected');
      const count = () => own.map((c) => c.eventNames().reduce((n, e) => n + c.listenerCount(e), 0));
      const before = count();
      for (let i = 0; i < 3; i++) {
        const redlock = new Redlock({ nodes: own, nodeTimeout: TEST_NODE_TIMEOUT });
        await (await redlock.acquire('own', 5000)).release();
        await redlock.close();
      }
      expect(count()).toEqual(before);
    } finally {
      own.forEach((c) => c.disconnect());
    }
  });
});
