import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { GlideClient } from '@valkey/valkey-glide';
import { Redis } from 'ioredis';
import { InvalidArgumentError, Redlock, ResourceBusyError, type LockEvent, type RedlockOptions } from '../../lib/index.js';
import { GlideConnection, isGlide } from '../../lib/core/clients/glide.connection.js';
import { ACQUIRE, EXTEND } from '../../lib/core/scripts.js';
import { glideClient, watchPipelines, watchSingles } from '../support/glide.js';
import { otherGlide } from '../support/other-glide.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';
import { keysLeft } from '../support/node-stats.js';
import { checkedCommand } from '../support/resp.js';
import { TcpProxy } from '../faults/tcp-proxy.js';
import { until } from '../support/until.js';
import { TEST_NODE_TIMEOUT } from '../support/timeouts.js';

// What the GLIDE adapter must do beyond the shared behaviour suite (glide-behaviour.e2e-spec.ts):
// GLIDE reports no connection events and subscribes only at client creation.
let fleet: RedisFleet;
let raw: Redis[];
const glide: GlideClient[] = [];
const redlocks: Redlock[] = [];

const client = (options: Partial<RedlockOptions> = {}): Redlock => {
  const redlock = new Redlock({ nodes: glide, retryDelay: 10, retryJitter: 10, nodeTimeout: TEST_NODE_TIMEOUT, ...options });
  redlocks.push(redlock);
  return redlock;
};

beforeAll(async () => {
  fleet = await startFleet(3);
  raw = fleet.ports.map((port) => new Redis(port));
  glide.push(...(await Promise.all(fleet.ports.map((port) => glideClient(port)))));
});

afterEach(async () => {
  await Promise.all(redlocks.splice(0).map((r) => r.close()));
  for (let i = 0; i < fleet.size; i++) if (!fleet.nodes[i]!.running) await fleet.restart(i);
  await Promise.all(raw.map((r) => r.flushall()));
});

afterAll(async () => {
  glide.forEach((g) => g.close());
  raw?.forEach((r) => r.disconnect());
  await fleet?.stop();
});

describe('Valkey GLIDE clients as nodes', () => {
  it('recognises a GlideClient of another copy of the package by its shape, and names it by address and database', async () => {
    const OtherGlideClient = await otherGlide();
    const own = await OtherGlideClient.createClient({ addresses: [{ host: 'localhost', port: fleet.ports[0]! }], databaseId: 2 });
    try {
      expect(own).not.toBeInstanceOf(GlideClient);
      expect(isGlide(own)).toBe(true);
      const redlock = client({ nodes: [own, glide[1]!, glide[2]!] });
      expect(redlock.nodeLabels).toEqual([`127.0.0.1:${fleet.ports[0]}/2`, ...fleet.ports.slice(1).map((p) => `127.0.0.1:${p}/0`)]);
      const lock = await redlock.acquire('copy', 5000);
      // Decided at a quorum: node 0 may answer after acquire() returned.
      await raw[0]!.select(2);
      await until(async () => (await raw[0]!.exists('redlock:lock:copy')) === 1, 'the key in database 2 of node 0');
      await lock.release();
      // One server and database given as a GLIDE client and as a URL is one node, refused twice.
      expect(() => new Redlock({ nodes: [glide[0]!, fleet.urls[0]!, glide[1]!] })).toThrow(InvalidArgumentError);
    } finally {
      await raw[0]!.select(0);
      own.close();
    }
  });

  it('a restart while nothing is in flight, which GLIDE reconnects to silently, is seen by the restart guard', async () => {
    const holder = client({ retryCount: 0, restartGuard: 0 });
    const events: LockEvent[] = [];
    const watcher = client({ retryCount: 0, onEvent: (e) => events.push(e) }); // the default guard, 'auto'
    await watcher.acquire('other', 10_000).then((l) => l.release()); // its window: the 10 s ttl it used
    const held = await holder.acquire('guarded', 10_000);
    await until(async () => (await Promise.all(raw.map((r) => r.exists('redlock:lock:guarded')))).every(Boolean), 'the keys everywhere');
    // The holder keeps node 0 only; node 2 crashes and comes back empty, while no command is in flight.
    await raw[1]!.del('redlock:lock:guarded');
    // Node 2's run id read first: a node whose first INFO had not answered never voted, and is not reported restarted.
    await until(async () => (await watcher.ping()).every((n) => n.status === 'up'), 'every node verified');
    await fleet.kill(2);
    await fleet.restart(2);
    await until(() => events.some((e) => e.type === 'node-restarted'), 'the restart seen');
    expect(events.filter((e) => e.type === 'node-restarted')).toEqual([expect.objectContaining({ node: `127.0.0.1:${fleet.ports[2]}/0` })]);
    expect(await glide[2]!.ping()).toBe('PONG'); // GLIDE itself answers on node 2 again
    // Nodes 1 and 2 would grant it: two holders, but for the guard.
    const refused = await watcher.acquire('guarded', 10_000).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ResourceBusyError);
    expect((refused as ResourceBusyError).attempts[0]!.nodes[2]!.outcome).toBe('excluded');
    expect(held.isHeld).toBe(true);
    await held.release();
  });

  it('a connection that drops under a command is lost (the command fails at once), then ready again', async () => {
    // 100 ms each way, so that the reply is still on its way when the server drops the connection.
    const proxy = await TcpProxy.latency(fleet.ports[0]!, 100, 100);
    const proxied = await GlideClient.createClient({
      addresses: [{ host: '127.0.0.1', port: proxy.port }],
      requestTimeout: 5000,
    });
    const connection = new GlideConnection(proxied);
    const seen: string[] = [];
    const off = [connection.on('lost', () => seen.push('lost')), connection.on('ready', () => seen.push('ready'))];
    try {
      const pings = async () => Number(/cmdstat_ping:calls=(\d+)/.exec(await raw[0]!.info('commandstats'))?.[1] ?? 0);
      const before = await pings();
      const started = performance.now();
      const inFlight = connection.ping().catch((e: Error) => e.name);
      // The server ran the PING (its reply is on its way back through the proxy): now the connections drop.
      await until(async () => (await pings()) > before, 'the PING run on the server', 2000, 2);
      // GLIDE keeps more than one connection per client: every one but the test's own.
      await raw[0]!.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
      expect(await inFlight).toBe('ConnectionError');
      expect(performance.now() - started).toBeLessThan(1000); // not the 5 s request timeout
      expect(seen).toEqual(['lost']);
      expect(connection.isReady).toBe(false);
      await until(() => seen.length === 2, 'ready again');
      expect(seen).toEqual(['lost', 'ready']);
      expect(await connection.ping()).toBe('PONG');
    } finally {
      off.forEach((f) => f());
      proxied.close();
      await proxy.stop();
    }
  });

  // A hung node killed with commands in flight and restarted: the node-failure suite (glide-suites.e2e-spec.ts).

  it('a paused node: locks go on at quorum, the node is reported hung, and counts again once resumed', async () => {
    const events: LockEvent[] = [];
    const redlock = client({ nodeTimeout: 50, restartGuard: 0, onEvent: (e) => events.push(e) });
    await redlock.acquire('warm', 5000).then((l) => l.release());
    await fleet.pause(1);
    try {
      // Rounds decide at quorum without it; once its oldest command has waited past the node timeout, it is hung.
      let i = 0;
      await until(async () => {
        await (await redlock.acquire(`paused:${i++}`, 5000)).release();
        return events.some((e) => e.type === 'node-hung');
      }, 'the node reported hung');
      expect(events.find((e) => e.type === 'node-hung')).toMatchObject({ node: `127.0.0.1:${fleet.ports[1]}/0` });
    } finally {
      await fleet.resume(1);
    }
    await until(async () => (await redlock.ping()).every((n) => n.status === 'up'), 'node 1 answering again');
    await fleet.pause(0);
    try {
      // A quorum now needs node 1.
      const lock = await redlock.acquire('needs-1', 5000, { retryCount: 0 });
      expect(await raw[1]!.exists('redlock:lock:needs-1')).toBe(1);
      await lock.release();
    } finally {
      await fleet.resume(0);
    }
  });

  it('after SCRIPT FLUSH, sends the script once by EVAL, and never after the caller’s deadline', async () => {
    const connection = new GlideConnection(glide[0]!);
    const exists = async () => ((await raw[0]!.script('EXISTS', ACQUIRE.sha, EXTEND.sha)) as number[]).join(',');
    const run = (fallbackUntil: number) =>
      new Promise<unknown>((resolve) =>
        connection.evalsha(EXTEND, ['redlock:lock:x'], ['v', '1000'], (error, reply) => resolve(error ?? reply), fallbackUntil),
      );
    await raw[0]!.script('FLUSH');
    // The NOSCRIPT came back after the deadline: no EVAL (it could overtake the caller's undo).
    const late = await run(performance.now() - 1);
    expect(String(late)).toMatch(/^Error: NOSCRIPT .*answered too late to send the script/);
    expect(await exists()).toBe('0,0');
    expect(await run(Infinity)).toBe(0);
    expect(await exists()).toBe('0,1');
    // Through the lock client: its scripts flushed, the acquire falls back and succeeds.
    const redlock = client();
    await redlock.ready();
    await Promise.all(raw.map((r) => r.script('FLUSH')));
    await (await redlock.acquire('flushed', 5000)).release();
  });

  it('sends the commands concurrent locks send to one node in one tick as one pipeline, each command with its own reply (NOSCRIPT included)', async () => {
    const sizes: number[] = [];
    const own = await Promise.all(fleet.ports.map((port) => glideClient(port)));
    watchPipelines(own, sizes);
    try {
      const redlock = client({ nodes: own });
      await redlock.ready();
      // Flushed scripts: the pipelined EVALSHAs answer NOSCRIPT one by one, and each falls back to EVAL on its own.
      await Promise.all(raw.map((r) => r.script('FLUSH')));
      const tokens = await Promise.all(
        Array.from({ length: 32 }, (_, i) => redlock.using(`piped:${i}`, 5000, async (lock) => lock.fencingToken)),
      );
      expect(sizes.some((n) => n > 1)).toBe(true);
      expect(tokens.every((t) => typeof t === 'number')).toBe(true); // every lock taken, with a fencing token
      // And every one released (a release is decided at quorum: the last node's DEL may still be on its way).
      await until(async () => (await keysLeft(raw, 'redlock:lock:*')).length === 0, 'every key released');
      // The fallback cached the script again on every node (a node's replies may come after its lock was decided).
      await until(
        async () => (await Promise.all(raw.map((r) => r.script('EXISTS', ACQUIRE.sha)))).flat().every((n) => n === 1),
        'the script cached again',
      );
    } finally {
      own.forEach((c) => c.close());
    }
  });

  it("sends a tick's commands to a node as one pipeline, the first one to an idle node included", async () => {
    const own = await Promise.all(fleet.ports.map((port) => glideClient(port)));
    try {
      const redlock = client({ nodes: own });
      await redlock.ready();
      const sizes: number[] = [];
      const singles: string[] = [];
      watchPipelines(own, sizes);
      watchSingles(own, singles);
      // Two locks asked for in one tick, on idle nodes: each node gets one request of two commands.
      const locks = await Promise.all([redlock.acquire('tick:a', 5000), redlock.acquire('tick:b', 5000)]);
      // Not counted: the connection's liveness probe (INFO or PING, sent alone on its own
      // timer), which may fall inside this window (a CI run saw one INFO there).
      const lockSingles = singles.filter((name) => name !== 'INFO' && name !== 'PING');
      expect({ sizes, singles: lockSingles }).toEqual({ sizes: own.map(() => 2), singles: [] });
      await Promise.all(locks.map((lock) => lock.release()));
    } finally {
      own.forEach((c) => c.close());
    }
  });

  it('sends a client of another copy of the package one request per command (its Batch is not the loaded copy’s)', async () => {
    const OtherGlideClient = await otherGlide();
    const sizes: number[] = [];
    const other = await Promise.all(fleet.ports.map((port) => OtherGlideClient.createClient({ addresses: [{ host: '127.0.0.1', port }] })));
    watchPipelines(other, sizes);
    try {
      const ownSizes: number[] = [];
      const unwatch = watchPipelines(glide, ownSizes);
      try {
        const burst = async (r: Redlock) => {
          await r.ready(); // then whether its nodes' commands are pipelined is settled
          await Promise.all(Array.from({ length: 16 }, (_, i) => r.using(`copy:${i}`, 5000, async () => undefined)));
        };
        await burst(client()); // clients of the copy the library loads: pipelined
        expect(ownSizes.some((n) => n > 1)).toBe(true);
        await burst(client({ nodes: other }));
        expect(sizes).toEqual([]);
      } finally {
        unwatch();
      }
    } finally {
      other.forEach((c) => c.close());
    }
  });

  it('wakes waiters over subscriber clients made from the node client’s settings (an ACL user), and closes them with the lock client', async () => {
    for (const port of fleet.ports) {
      await checkedCommand(port, [
        'ACL',
        'SETUSER',
        'locker',
        'on',
        '>locker-pw',
        '~redlock:*',
        'resetchannels',
        '&redlock:wake:*',
        '+@all',
      ]);
    }
    const asLocker = await Promise.all(
      fleet.ports.map((port) => glideClient(port, { credentials: { username: 'locker', password: 'locker-pw' } })),
    );
    try {
      const holder = client({ nodes: asLocker });
      const waiter = client({ nodes: asLocker, retryDelay: 5000, retryJitter: 0 });
      const held = await holder.acquire('wake', 5000);
      const started = performance.now();
      const waiting = waiter.acquire('wake', 5000);
      const channels = () => raw[0]!.pubsub('CHANNELS', 'redlock:wake:*') as Promise<string[]>;
      // A subscriber as the ACL user: made from the node client's credentials. (Subscribers of earlier
      // tests' clients, as the default user, may linger: GLIDE drops a closed client's connection late.)
      const lockerSubscribed = async () =>
        ((await raw[0]!.call('CLIENT', 'LIST')) as string).split('\n').some((c) => / sub=1 .* user=locker /.test(c));
      await until(lockerSubscribed, 'a subscriber connected as the ACL user');
      await held.release();
      await (await waiting).release();
      expect(performance.now() - started).toBeLessThan(2500); // woken, not polled after 5 s
      await Promise.all([holder.close(), waiter.close()]);
      await until(async () => (await channels()).length === 0, 'the subscribers closed');
    } finally {
      asLocker.forEach((c) => c.close());
    }
  });

  it('subscribes once the node is back when it was down at the first wait, as a reconnecting client would', async () => {
    const connection = new GlideConnection(glide[1]!);
    await fleet.kill(1);
    const messages: string[] = [];
    const subscription = connection.subscribe('redlock:wake:late', (m) => messages.push(m));
    try {
      await subscription.confirmed; // the first try failed: the node is down
      await fleet.restart(1);
      const late = new Redis(fleet.ports[1]!);
      try {
        await until(async () => Number((await late.pubsub('NUMSUB', 'redlock:wake:late'))[1]) === 1, 'the subscriber created', 10_000);
        await late.publish('redlock:wake:late', 'w1');
        await until(() => messages.length === 1, 'the message');
        expect(messages).toEqual(['w1']);
      } finally {
        late.disconnect();
      }
    } finally {
      subscription.close();
    }
  });

  it('a node that went down is reported, and its health says why at once instead of waiting for a PING', async () => {
    const events: LockEvent[] = [];
    const redlock = client({ onEvent: (e) => events.push(e) });
    await (await redlock.acquire('gone', 5000)).release();
    await fleet.kill(2);
    const label = redlock.nodeLabels[2]!;
    // The connection's own report (not the wake subscriber's): its probe timed out, or GLIDE
    // saw the socket close and its reconnect failed. Which comes first is a race that the
    // machine's load decides (a KeyDB run under the full suite saw the second).
    await until(
      () => events.some((e) => e.type === 'node-error' && e.node === label && !/wake channel/.test(e.message)),
      'the node reported down',
    );
    const health = await redlock.ping();
    expect(health[2]).toMatchObject({
      status: 'down',
      error: expect.stringMatching(/^not connected \((unreachable|reconnecting); last error: .*(timed out|channel closed)/i),
    });
    expect(health.slice(0, 2).map((node) => node.status)).toEqual(['up', 'up']);
  });

  it('a connection that dropped and cannot reconnect (its node down) is reported, as ioredis reports a refused reconnect', async () => {
    const proxy = await TcpProxy.latency(fleet.ports[0]!, 100, 100);
    const proxied = await GlideClient.createClient({ addresses: [{ host: '127.0.0.1', port: proxy.port }], requestTimeout: 500 });
    const connection = new GlideConnection(proxied);
    const seen: string[] = [];
    const off = [
      connection.on('lost', () => seen.push('lost')),
      connection.on('error', () => seen.push('error')),
      connection.on('ready', () => seen.push('ready')),
    ];
    try {
      const pings = async () => Number(/cmdstat_ping:calls=(\d+)/.exec(await raw[0]!.info('commandstats'))?.[1] ?? 0);
      const before = await pings();
      const inFlight = connection.ping().catch((e: Error) => e.name);
      await until(async () => (await pings()) > before, 'the PING run on the server', 2000, 2);
      // The path goes away under the command, and stays away: reconnecting is refused.
      await proxy.stop();
      expect(await inFlight).toBe('ConnectionError');
      await until(() => seen.includes('error'), 'the failing reconnect reported');
      expect(seen).toEqual(['lost', 'error']);
    } finally {
      off.forEach((f) => f());
      proxied.close();
      await proxy.stop();
    }
  });

  it('leaves the application’s GLIDE clients open and unwatched after close()', async () => {
    const infoCalls = async () => Number(/cmdstat_info:calls=(\d+)/.exec(await raw[0]!.info('commandstats'))?.[1] ?? 0);
    const redlock = client();
    await redlock.ready();
    const before = await infoCalls();
    await until(async () => (await infoCalls()) > before + 1, 'the run id read while the client watches');
    await redlock.close();
    await new Promise((resolve) => setTimeout(resolve, 150)); // a probe sent before close() has landed
    const after = await infoCalls();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await infoCalls()).toBe(after + 1); // only the count above's own INFO
    expect(await glide[0]!.ping()).toBe('PONG');
  });
});
