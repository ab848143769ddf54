import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis, type RedisOptions } from 'ioredis';
import { InvalidArgumentError, LockLostError, Redlock, ResourceBusyError, type LockEvent } from '../../lib/index.js';
import { SentinelDeployment } from '../support/sentinel-deployment.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';
import { checkedCommand } from '../support/resp.js';
import { until } from '../support/until.js';
import { TEST_NODE_TIMEOUT } from '../support/timeouts.js';

// Issue 15, Sentinel-managed nodes: group lock-a is a master with one replica, lock-b a
// master alone, both watched by 3 sentinels; two standalone servers complete a quorum.
let sentinel: SentinelDeployment;
let fleet: RedisFleet;
const clients: Redlock[] = [];
const users: Redis[] = [];

const group = (name: string, extra: RedisOptions = {}): RedisOptions => ({ sentinels: sentinel.addresses, name, ...extra });
const labelOf = (name: string) =>
  `sentinel(${name} at ${sentinel.addresses
    .map((a) => `127.0.0.1:${a.port}`)
    .sort()
    .join(',')})/0`;

function client(options: Partial<ConstructorParameters<typeof Redlock>[0]> = {}): Redlock {
  const redlock = new Redlock({ nodes: [group('lock-a'), ...fleet.urls], retryCount: 0, nodeTimeout: TEST_NODE_TIMEOUT, ...options });
  clients.push(redlock);
  return redlock;
}

/** The value of `key` on the group's current master. */
async function onMaster(name: string, key: string): Promise<unknown> {
  return checkedCommand((await sentinel.master(name)).port, ['GET', key]);
}

/** Clients subscribed on the sentinels: ioredis's failover detectors (sentinels subscribe on the servers only). */
async function detectors(): Promise<number> {
  const lists = await Promise.all(sentinel.sentinels.map((s) => checkedCommand(s.port, ['CLIENT', 'LIST'])));
  return lists.flatMap((list) => String(list).split('\n')).filter((line) => / sub=[1-9]/.test(line)).length;
}

beforeAll(async () => {
  [sentinel, fleet] = await Promise.all([SentinelDeployment.start([{ name: 'lock-a', replicas: 1 }, { name: 'lock-b' }]), startFleet(2)]);
});

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  users.splice(0).forEach((u) => u.disconnect());
});

afterAll(async () => {
  await Promise.all([sentinel?.stop(), fleet?.stop()]);
});

describe('Sentinel-managed nodes (issue 15)', () => {
  it('takes a lock through a Sentinel group, given as options (its own connection) or as the application client', async () => {
    // Two nodes: a quorum needs the Sentinel-managed one.
    const owned = client({ nodes: [group('lock-a', { failoverDetector: true }), fleet.urls[0]!] });
    expect(owned.nodeLabels[0]).toBe(labelOf('lock-a'));
    const a = await owned.acquire('through-sentinel', 5000);
    expect(await onMaster('lock-a', 'redlock:lock:through-sentinel')).not.toBeNull();
    await a.release();
    expect(await onMaster('lock-a', 'redlock:lock:through-sentinel')).toBeNull();
    // ioredis's failover detector listens on every sentinel; close() stops it (quit() alone does not).
    await until(async () => (await detectors()) === sentinel.sentinels.length, 'a failover detector on every sentinel');
    await owned.close();
    await until(async () => (await detectors()) === 0, 'no failover detector left on the sentinels', 2000);

    const app = new Redis(group('lock-a'));
    users.push(app);
    const passed = client({ nodes: [app, fleet.urls[0]!] });
    expect(passed.nodeLabels[0]).toBe(labelOf('lock-a'));
    const b = await passed.acquire('through-sentinel', 5000);
    expect(await onMaster('lock-a', 'redlock:lock:through-sentinel')).not.toBeNull();
    await b.release();
    await passed.close();
    expect(app.status).toBe('ready'); // the application's client is left open
  });

  it('tells Sentinel groups apart: two groups are two nodes, one group twice is refused', async () => {
    const two = client({ nodes: [group('lock-a'), group('lock-b'), fleet.urls[0]!] });
    const lock = await two.acquire('two-groups', 5000);
    expect(await onMaster('lock-a', 'redlock:lock:two-groups')).not.toBeNull();
    expect(await onMaster('lock-b', 'redlock:lock:two-groups')).not.toBeNull();
    await lock.release();

    // The same sentinels in another order, and the group's client passed as well: one group.
    const app = new Redis(group('lock-a', { lazyConnect: true }));
    users.push(app);
    for (const twice of [group('lock-a', { sentinels: [...sentinel.addresses].reverse() }), app]) {
      let error: unknown;
      try {
        client({ nodes: [group('lock-a'), twice, ...fleet.urls] });
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(InvalidArgumentError);
      expect((error as InvalidArgumentError).argument).toBe('nodes[1]');
      expect((error as Error).message).toContain('a server different from nodes[0]');
      expect((error as Error).message).toContain('got "sentinel(lock-a at 127.0.0.1:'); // cut at 60 characters
    }
  });

  it('a failover while locks are held: the new master is excluded for the whole window; a lock a quorum of other nodes holds is kept', async () => {
    const events: LockEvent[] = [];
    const holder = client();
    holder.subscribe((e) => events.push(e));
    // The locks must outlive every step below, or their keys expire and the checks mean nothing.
    // With 10 s, a loaded run (Valkey, two CPU hogs) once got the lock the acquire below must
    // refuse: the failover and its detection took most of the 10 s, the restart was seen (node 0
    // excluded), so only the expiry of the key on the standalone node that kept it fits.
    const ttl = 60_000;
    const kept = await holder.acquire('failover:kept', ttl);
    const lost = await holder.acquire('failover:lost', ttl);
    const master = await sentinel.master('lock-a');
    const replica = sentinel.servers('lock-a').find((s) => s !== master)!;
    const key = (resource: string) => `redlock:lock:${resource}`;
    await until(
      async () => (await checkedCommand(replica.port, ['EXISTS', key('failover:kept'), key('failover:lost')])) === 2,
      'both keys replicated',
    );
    // Replication is asynchronous: 'failover:lost' plays an acquisition whose write had not
    // reached the replica when the master went, and whose standalone node 1 lost its key too.
    await checkedCommand(replica.port, ['CONFIG', 'SET', 'replica-read-only', 'no']);
    await checkedCommand(replica.port, ['DEL', key('failover:lost')]);
    await checkedCommand(fleet.node(1).port, ['DEL', key('failover:lost')]);
    // The replica has been up for a while: its uptime must not shorten the exclusion.
    const uptime = async () => Number(/uptime_in_seconds:(\d+)/.exec(String(await checkedCommand(replica.port, ['INFO', 'server'])))![1]);
    await until(async () => (await uptime()) >= 2, 'the replica reporting 2 s of uptime', 5000, 100);

    expect(await sentinel.failover('lock-a')).toBe(replica);
    await until(() => events.some((e) => e.type === 'node-restarted'), 'the failover seen as a restart', 10_000);
    expect(events.filter((e) => e.type === 'node-restarted')).toEqual([
      // 'auto': the longest ttl this client used, from now, whatever the new master's uptime.
      expect.objectContaining({ node: labelOf('lock-a'), excludedFor: ttl }),
    ]);

    // The new master lacks 'failover:lost' and node 1 too: counted, they would let a second holder in.
    expect(lost.isHeld).toBe(true); // within its validity: its key on the standalone node that kept it is there
    const refused = await holder.acquire('failover:lost', ttl).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ResourceBusyError);
    expect((refused as ResourceBusyError).attempts[0]!.nodes[0]!.outcome).toBe('excluded');
    const unguarded = await client({ restartGuard: 0 }).acquire('failover:lost', ttl);
    expect(lost.isHeld && unguarded.isHeld).toBe(true);
    await unguarded.release();

    // Still held on both standalone nodes: kept. Held on one only: lost at its next extension.
    await expect(kept.extend()).resolves.toBe(kept);
    await expect(lost.extend()).rejects.toBeInstanceOf(LockLostError);
    await kept.release();
  });
});
