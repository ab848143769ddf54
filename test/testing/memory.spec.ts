import { afterEach, describe, expect, it, jest } from '@jest/globals';
import {
  InvalidArgumentError,
  QuorumUnreachableError,
  RedisFencedStore,
  Redlock,
  ResourceBusyError,
  StaleTokenError,
  type LockEvent,
} from '../../lib/index.js';
import * as scripts from '../../lib/core/scripts.js';
import * as permitScripts from '../../lib/core/permit-scripts.js';
import { ACQUIRE, EXTEND, INSPECT, RELEASE } from '../../lib/core/scripts.js';
import { IMPLEMENTED_SHAS, memoryNodeScripts } from '../../lib/testing/memory-scripts.js';
import { asNodeSpecs, createMemoryNodes, createMemoryRedlock, MemoryRedisNode } from '../../lib/testing/index.js';
import { describeLockBehaviour, type PermitBackend } from './lock-behaviour.js';
import { describePermitBehaviour } from './permit-behaviour.js';
import { until } from '../support/until.js';

const memoryBackend = async (): Promise<PermitBackend> => {
  const nodes = createMemoryNodes(3);
  return {
    nodes,
    direct: nodes,
    deleteKey: async (i, key) => void (await nodes[i]!.del(key)),
    flush: async () => nodes.forEach((n) => n.flush()),
    stop: async () => undefined,
  };
};
describeLockBehaviour('in-memory nodes', memoryBackend);
describePermitBehaviour('in-memory nodes', memoryBackend);

const clients: Redlock[] = [];
function memoryClient(nodes: MemoryRedisNode[], options: Partial<ConstructorParameters<typeof Redlock>[0]> = {}): Redlock {
  const redlock = new Redlock({ nodes: asNodeSpecs(nodes), retryDelay: 10, retryJitter: 10, ...options });
  clients.push(redlock);
  return redlock;
}
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
});

describe('MemoryRedisNode', () => {
  it('has a JavaScript twin for every Lua script, written from the Lua as it is now', () => {
    const all = ([...Object.values(scripts), ...Object.values(permitScripts)] as unknown[]).filter(
      (s): s is scripts.Script => typeof s === 'object' && s !== null && 'sha' in s && 'lua' in s,
    );
    expect(
      memoryNodeScripts()
        .map((s) => s.name)
        .sort(),
    ).toEqual(all.map((s) => s.name).sort());
    // A changed script needs its twin in lib/testing/memory-scripts.ts reviewed, then this table updated.
    expect(Object.fromEntries(all.map((s) => [s.name, s.sha]))).toEqual(IMPLEMENTED_SHAS);
  });

  it('answers NOSCRIPT until EVAL loaded a script, and refuses scripts that are not the library’s', async () => {
    const node = new MemoryRedisNode();
    await expect(node.evalsha(EXTEND.sha, 1, 'k', 'v', 1000)).rejects.toThrow(/^NOSCRIPT/);
    await expect(node.evalsha('0'.repeat(40), 0)).rejects.toThrow(/^NOSCRIPT/);
    expect(await node.eval(EXTEND.lua, 1, 'k', 'v', 1000)).toBe(0);
    expect(await node.evalsha(EXTEND.sha, 1, 'k', 'v', 1000)).toBe(0);
    await expect(node.eval('return 1', 0)).rejects.toThrow(/runs only nest-redlock's own scripts/);
    await expect(node.eval(EXTEND.lua, 2, 'k')).rejects.toThrow("Number of keys can't be greater than number of args");
    // A restart empties the script cache, as on Redis.
    node.restart();
    await expect(node.evalsha(EXTEND.sha, 1, 'k', 'v', 1000)).rejects.toThrow(/^NOSCRIPT/);
  });

  it('keeps keys with millisecond expiry on its own clock, and the Redis types the scripts use', async () => {
    let now = 1_000_000;
    const node = new MemoryRedisNode({ now: () => now });
    await node.set('a', '1', 'PX', 100);
    await node.set('b', '2');
    expect(await node.pttl('a')).toBe(100);
    expect(await node.pttl('b')).toBe(-1);
    expect(await node.pttl('missing')).toBe(-2);
    expect(await node.keys()).toEqual(['a', 'b']);
    now += 100;
    expect(await node.get('a')).toBe('1'); // alive up to and including its expiry instant, as in Redis
    now += 1;
    expect(await node.get('a')).toBeNull();
    expect(await node.keys('[ab]')).toEqual(['b']);
    expect(await node.del('a', 'b')).toBe(1);
    expect(await node.exists('b')).toBe(0);

    // A command on a key of another type fails like on Redis.
    await node.set('q', 'a string');
    await expect(node.zcard('q')).rejects.toThrow(/^WRONGTYPE/);
    await expect(node.eval(INSPECT.lua, 3, 'l', 'f', 'q')).rejects.toThrow(/^WRONGTYPE/);
  });

  it('ACQUIRE that finds its own value already there (a resent command, a lost undo) sets it again for the full ttl', async () => {
    // As on Redis (redlock.e2e-spec): otherwise the key would expire before the validity counted from this attempt.
    const node = new MemoryRedisNode();
    await node.set('redlock:lock:again', 'v', 'PX', 100);
    expect(await node.eval(ACQUIRE.lua, 1, 'redlock:lock:again', 'v', '10000', '')).toEqual([1, 0]);
    expect(await node.pttl('redlock:lock:again')).toBeGreaterThan(9000);
  });

  it('is an independent node per instance; duplicate() is another connection to the same node', async () => {
    const [a, b] = createMemoryNodes(2);
    await a!.set('k', 'a');
    expect(await b!.get('k')).toBeNull();
    const twin = a!.duplicate();
    expect(await twin.get('k')).toBe('a');
    expect(twin.options).toEqual(a!.options);
    expect(a!.options.port).not.toBe(b!.options.port);
    // One server given twice is refused, as two URLs of one Redis would be.
    expect(() => new Redlock({ nodes: asNodeSpecs([a!, twin]) })).toThrow(InvalidArgumentError);
    // A subscribed connection runs no other command, as in Redis.
    await twin.subscribe('ch');
    await expect(twin.get('k')).rejects.toThrow(/only .*SUBSCRIBE/);
    const messages: string[] = [];
    twin.on('message', (channel: string, message: string) => messages.push(`${channel}:${message}`));
    await twin.unsubscribe('ch');
    await twin.subscribe('other');
    twin.disconnect();
    await expect(twin.get('k')).rejects.toThrow('Connection is closed.');
    expect(await a!.get('k')).toBe('a');
    expect(messages).toEqual([]);
  });

  it('simulates nodes down: a minority is tolerated, a majority makes the quorum unreachable', async () => {
    const nodes = createMemoryNodes(3);
    const events: LockEvent[] = [];
    const redlock = memoryClient(nodes, { onEvent: (e) => events.push(e) });
    nodes[0]!.down();
    expect(nodes[0]!.status).toBe('reconnecting');
    expect(events).toContainEqual(expect.objectContaining({ type: 'node-error', node: `memory:${nodes[0]!.options.port}/0` }));
    const lock = await redlock.acquire('partial', 5000);
    await lock.release();
    nodes[1]!.down();
    const error = await redlock.acquire('partial', 5000, { retryCount: 0 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(QuorumUnreachableError);
    expect((await redlock.ping(100)).map((n) => n.status)).toEqual(['down', 'down', 'up']);
    nodes[0]!.up();
    nodes[1]!.up();
    expect(nodes[0]!.status).toBe('ready');
    expect((await redlock.ping(100)).map((n) => n.status)).toEqual(['up', 'up', 'up']);
    const again = await redlock.acquire('partial', 5000);
    await again.release();
  });

  it('delivers PUBLISH to subscribed connections, and resubscribes them after the node comes back', async () => {
    const node = new MemoryRedisNode();
    const subscriber = node.duplicate();
    const messages: string[] = [];
    subscriber.on('message', (channel: string, message: string) => messages.push(`${channel}:${message}`));
    subscriber.on('error', () => undefined);
    node.down();
    await expect(subscriber.subscribe('redlock:wake:c1')).rejects.toThrow(/is down/);
    node.up();
    // A release hands the lock over to the first waiter, and says so on its client's channel.
    await node.set('redlock:lock:r', 'holder', 'PX', 5000);
    // Waiter w1 finds it held and queues at its attempt 3 (no fencing; the script builds the queue keys from the lock key and the prefix's length).
    const queued = await node.eval(ACQUIRE.lua, 1, 'redlock:lock:r', 'w1-value', 1000, `c1.w1 ${Date.now()} 5000 3`, 8);
    expect(queued).toEqual([0, expect.any(Number)]);
    expect(await node.zcard('redlock:queue:r')).toBe(1);
    expect(await node.eval(RELEASE.lua, 1, 'redlock:lock:r', 'holder', 8)).toBe(1);
    await until(() => messages.length > 0, 'the hand-over message');
    // The waiter, the attempt whose entry the release read, the token (0: fencing off).
    expect(messages).toEqual(['redlock:wake:c1:c1.w1 3 0']);
    expect(await node.get('redlock:lock:r')).toBe('w1-value');
  });

  it('simulates a hung node: commands wait until resume(), the quorum decides without it', async () => {
    const nodes = createMemoryNodes(3);
    const redlock = memoryClient(nodes, { nodeTimeout: 50 });
    nodes[2]!.pause();
    const lock = await redlock.acquire('hung', 5000);
    expect(nodes[2]!.isPaused).toBe(true);
    await lock.release();
    nodes[2]!.resume();
    // The held commands ran in order: the acquire, then its release.
    await until(async () => (await nodes[2]!.keys('redlock:lock:*')).length === 0, 'the paused node to catch up');
    const next = await redlock.acquire('hung', 5000, { retryCount: 0 });
    await next.release();
  });

  it('a foreign holder can be planted on a majority of nodes', async () => {
    const nodes = createMemoryNodes(3);
    const redlock = memoryClient(nodes, { retryCount: 0 });
    await nodes[0]!.set('redlock:lock:taken', 'someone-else', 'PX', 60_000);
    await nodes[1]!.set('redlock:lock:taken', 'someone-else', 'PX', 60_000);
    await expect(redlock.acquire('taken', 5000)).rejects.toBeInstanceOf(ResourceBusyError);
    expect((await redlock.inspect('taken')).heldOn).toBe(2);
  });

  it('restart() loses keys and changes the run id: the restart guard leaves the node out', async () => {
    const nodes = createMemoryNodes(3);
    const events: LockEvent[] = [];
    const redlock = memoryClient(nodes, { restartGuard: 60_000, onEvent: (e) => events.push(e) });
    const lock = await redlock.acquire('guarded', 5000);
    nodes[0]!.restart();
    await until(() => events.some((e) => e.type === 'node-restarted'), 'the node-restarted event');
    expect(await nodes[0]!.exists('redlock:lock:guarded')).toBe(0);
    expect((await redlock.ping(100))[0]).toMatchObject({ status: 'down', excluded: true });
    await lock.release();
    // Two nodes still make the quorum; a second restart would not.
    const next = await redlock.acquire('guarded', 5000);
    await next.release();
    nodes[1]!.restart();
    await until(() => events.filter((e) => e.type === 'node-restarted').length === 2, 'the second restart');
    await expect(redlock.acquire('guarded', 5000, { retryCount: 0 })).rejects.toBeInstanceOf(QuorumUnreachableError);
  });

  it('answers with a latency when asked to', async () => {
    const node = new MemoryRedisNode({ latency: 30 });
    const started = performance.now();
    expect(await node.ping()).toBe('PONG');
    expect(performance.now() - started).toBeGreaterThanOrEqual(25);
    expect(() => new MemoryRedisNode({ latency: -1 })).toThrow(TypeError);
  });

  it('serves RedisFencedStore too', async () => {
    const store = new RedisFencedStore(new MemoryRedisNode());
    await store.set('invoice', 'v1', 10);
    expect(await store.get('invoice', 10)).toBe('v1');
    await expect(store.set('invoice', 'stale', 9)).rejects.toBeInstanceOf(StaleTokenError);
    await store.delete('invoice', 11);
    expect(await store.get('invoice', 11)).toBeNull();
  });
});

describe('createMemoryRedlock', () => {
  it('follows jest fake timers: advancing the clock runs a ttl out and ends a retry wait', async () => {
    jest.useFakeTimers();
    try {
      const redlock = createMemoryRedlock({ retryCount: 0 });
      const lock = await redlock.acquire('fake', 10_000);
      await expect(redlock.acquire('fake', 10_000)).rejects.toBeInstanceOf(ResourceBusyError);
      jest.advanceTimersByTime(10_001);
      expect(lock.isHeld).toBe(false);
      const next = await redlock.acquire('fake', 10_000);
      const waiting = redlock.acquire('fake', 10_000, { retryCount: 100, retryDelay: 1000 });
      // `next` expires 10 s after it was taken; the waiter looks every 1-1.1 s.
      await jest.advanceTimersByTimeAsync(12_500);
      expect((await waiting).isHeld).toBe(true);
      expect(next.isHeld).toBe(false);
      await redlock.close();
    } finally {
      jest.useRealTimers();
    }
  });

  it('builds a client over three new nodes by default, or over the nodes given', async () => {
    const redlock = createMemoryRedlock({ retryCount: 0 });
    clients.push(redlock);
    expect(redlock.quorum).toBe(2);
    expect(redlock.nodeLabels).toHaveLength(3);
    expect(redlock.nodeLabels.every((l) => /^memory:\d+\/0$/.test(l))).toBe(true);
    const lock = await redlock.acquire('x', 1000);
    expect(lock.fencingToken).toBeGreaterThan(0);
    await lock.release();

    const nodes = createMemoryNodes(5);
    const five = createMemoryRedlock({ nodes });
    clients.push(five);
    expect(five.quorum).toBe(3);
    const held = await five.acquire('y', 1000);
    expect(await Promise.all(nodes.map((n) => n.exists('redlock:lock:y')))).toEqual([1, 1, 1, 1, 1]);
    await held.release();
    expect(() => createMemoryRedlock({ nodes: 0 })).toThrow(TypeError);
  });
});
