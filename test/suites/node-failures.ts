/**
 * Nodes that die, hang (SIGSTOP) and come back, over any kind of node: locks
 * go on at a quorum, a call never waits on a hung node past the node timeout,
 * and a node back up counts again. Run by node-failures.e2e-spec.ts on ioredis
 * connections (and another copy's clients) and by each client library's spec.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { QuorumUnreachableError, Redlock, ResourceBusyError } from '../../lib/index.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';
import { commandCalls, onEveryNode } from '../support/node-stats.js';
import type { NodeKind, OpenedNodes } from '../support/node-kinds.js';
import { until } from '../support/until.js';
import { TEST_NODE_TIMEOUT } from '../support/timeouts.js';

export function describeNodeFailures(kind: NodeKind): void {
  describe(`node failures: ${kind.name}`, () => {
    let fleet: RedisFleet;
    let opened: OpenedNodes;
    /** ioredis connections for looking behind the lock clients' back. */
    let raw: Redis[];
    const clients: Redlock[] = [];

    function client(options: Partial<ConstructorParameters<typeof Redlock>[0]> = {}): Redlock {
      const redlock = new Redlock({ nodes: opened.nodes, retryDelay: 10, retryJitter: 20, nodeTimeout: TEST_NODE_TIMEOUT, ...options });
      clients.push(redlock);
      return redlock;
    }

    beforeAll(async () => {
      fleet = await startFleet(5);
      raw = fleet.urls.map((url) => new Redis(url));
      opened = await kind.open(fleet);
    });
    afterEach(async () => {
      // Resume first: closing a connection to a hung node makes ioredis wait 2 s for the socket.
      for (let i = 0; i < fleet.size; i++) if (fleet.nodes[i]!.paused) await fleet.resume(i);
      await Promise.all(clients.splice(0).map((c) => c.close()));
      for (let i = 0; i < fleet.size; i++) if (!fleet.nodes[i]!.running) await fleet.restart(i);
      // Every node runs again: a failed flush would leave this test's keys to the next one.
      await Promise.all(raw.map((r) => r.flushall()));
      // The application's clients reconnect on their own: the next test starts with every node answering.
      const probe = client({ restartGuard: 0 });
      await until(async () => (await probe.ping()).every((n) => n.status === 'up'), 'every node answering its client again');
      await Promise.all(clients.splice(0).map((c) => c.close()));
    });
    afterAll(async () => {
      await opened?.close();
      raw?.forEach((r) => r.disconnect());
      await fleet?.stop();
    });

    it('works with 2 of 5 nodes killed', async () => {
      await fleet.kill(3);
      await fleet.kill(4);
      const redlock = client();
      const lock = await redlock.acquire('degraded', 5000);
      await lock.extend(5000);
      await lock.release();
      // Within 1 s, well before the 5 s ttl: released, not expired.
      await until(() => onEveryNode(raw.slice(0, 3), 'redlock:lock:degraded', false), 'the key gone from the live nodes', 1000);
    });

    it('with 2 of 5 nodes paused, acquire returns within the per-node timeout plus a margin', async () => {
      const redlock = client({ nodeTimeout: 100 });
      await redlock.acquire('warm', 5000).then((l) => l.release()); // connections up
      await fleet.pause(3);
      await fleet.pause(4);
      const started = performance.now();
      const lock = await redlock.acquire('paused', 5000);
      // Decided by the live nodes: never held up by the paused ones, which would never answer. A margin of
      // 400 ms for the loaded test machine (100 was passed by 0.5 ms over node-redis in CI; GLIDE's native
      // threads passed 50 once).
      expect(performance.now() - started).toBeLessThan(100 + 400);
      await lock.release(); // the paused nodes time out: release still confirms on a quorum
    });

    it('with 2 of 5 nodes hung, sends them nothing new per call and leaves no ghost key when they resume', async () => {
      // 100 ms: with 50, a live node's answer came late now and then on the loaded test machine
      // (node-redis clients, which write on the next tick: a release short of a quorum, 1 run in 5).
      const nodeTimeout = 100;
      const redlock = client({ nodeTimeout });
      await redlock.acquire('warm', 5000).then((l) => l.release());
      const calls = (i: number) => commandCalls(raw[i]!, 'evalsha');
      const before = await Promise.all([3, 4].map(calls));
      await fleet.pause(3);
      await fleet.pause(4);
      // Until a node has been silent for a node timeout, nothing tells it from a slow one:
      // commands go to it. Count the cycles of that window.
      const hungAt = performance.now();
      let cycle = 0;
      while (performance.now() - hungAt < nodeTimeout + 10) await (await redlock.acquire(`hung:${cycle++}`, 5000)).release();
      const window = cycle;
      // From then on, however many calls: nothing more is sent to them.
      while (cycle < 5 * window + 100) await (await redlock.acquire(`hung:${cycle++}`, 5000)).release();
      await fleet.resume(3);
      await fleet.resume(4);
      await until(async () => (await redlock.ping()).every((n) => n.status === 'up'), 'the backlog answered');
      const after = await Promise.all([3, 4].map(calls));
      // At most the window's commands (an acquire and a release per cycle, now and then a
      // token write-back), never a command per later call.
      for (let k = 0; k < 2; k++) expect(after[k]! - before[k]!).toBeLessThanOrEqual(3 * window + 4);
      for (const i of [3, 4]) expect(await raw[i]!.keys('redlock:lock:hung:*')).toEqual([]);
      expect(cycle - window).toBeGreaterThan(3 * window + 4); // so the bound above can tell
    });

    /** Node 4 hung with commands in flight, killed and restarted: it must count again (not stay "hung"). */
    async function hungNodeKilledIsCountedAgain(redlock: Redlock): Promise<void> {
      await redlock.acquire('warm', 5000).then((l) => l.release());
      await fleet.pause(4);
      await (await redlock.acquire('in-flight', 5000)).release(); // node 4 left unanswered
      await fleet.kill(4); // its connection drops with those commands in flight
      await fleet.restart(4);
      await until(async () => (await redlock.ping()).every((n) => n.status === 'up'), 'node 4 back');
      // A quorum now needs node 4: its client must not still count it as hung.
      await Promise.all([fleet.pause(0), fleet.pause(1)]);
      const lock = await redlock.acquire('needs-4', 5000, { retryCount: 0 });
      expect(await raw[4]!.exists('redlock:lock:needs-4')).toBe(1);
      await lock.release();
    }

    it('a hung node killed with commands in flight and restarted is counted again', async () => {
      // Not about the restart guard (on by default, it would keep the restarted node out for the ttl).
      // 200 ms: with 50, every node's answer to the last release came late once under load (node-redis on KeyDB).
      await hungNodeKilledIsCountedAgain(client({ nodeTimeout: 200, restartGuard: 0 }));
    });

    // Over GLIDE a node killed with nothing in flight may not be seen down (see NodeKind.dropsUnseen): an
    // attempt then waits the node timeout on it, and the call fails once the drops are seen or its retries
    // are spent (both happen: under two CPU hogs GLIDE saw the drops before the first attempt once).
    const promptly = !kind.dropsUnseen;
    it(`with 3 of 5 nodes down, fails with the quorum error ${promptly ? 'promptly' : 'within its retries (drops may go unseen)'}`, async () => {
      const redlock = client({ retryCount: 10, retryDelay: 200 });
      await redlock.acquire('warm', 5000).then((l) => l.release());
      await Promise.all([fleet.kill(0), fleet.kill(1), fleet.kill(2)]);
      const started = performance.now();
      const error = await redlock.acquire('down', 5000).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(QuorumUnreachableError);
      const outcomes = (error as QuorumUnreachableError).attempts.at(-1)!.nodes.map((n) => n.outcome);
      if (promptly) {
        expect(outcomes.filter((o) => o === 'error')).toHaveLength(3);
        expect(performance.now() - started).toBeLessThan(200);
      } else {
        expect(outcomes.filter((o) => o === 'error' || o === 'timeout')).toHaveLength(3);
        expect((error as QuorumUnreachableError).attempts.length).toBeLessThanOrEqual(11);
      }
    });

    it('a busy resource is reported as busy, not as unreachable nodes, even with nodes down', async () => {
      const redlock = client({ retryCount: 0 });
      const held = await redlock.acquire('held', 5000);
      // Decided at a quorum: nodes 0-2, left up below, must hold it (an attempt could otherwise take a late one first).
      await until(() => onEveryNode(raw, 'redlock:lock:held'), 'the holder on every node');
      const busy = await redlock.acquire('held', 5000).catch((e: unknown) => e);
      expect(busy).toBeInstanceOf(ResourceBusyError);
      const outcomes = (busy as ResourceBusyError).attempts[0]!.nodes.map((n) => n.outcome);
      expect(outcomes.filter((o) => o === 'busy').length).toBeGreaterThanOrEqual(3);
      expect(outcomes.filter((o) => o === 'error' || o === 'timeout')).toEqual([]);

      // Held, with two nodes down as well: still "busy", since the nodes that answered say so.
      await Promise.all([fleet.kill(3), fleet.kill(4)]);
      await expect(redlock.acquire('held', 5000)).rejects.toBeInstanceOf(ResourceBusyError);
      await held.release();
    });
  });
}
