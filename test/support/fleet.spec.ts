import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { existsSync } from 'node:fs';
import { startFleet, liveNodes, RedisNode, type RedisFleet } from './redis-fleet.js';
import { canConnect, checkedCommand, ping, rawCommand, RespError } from './resp.js';
import { pidAlive } from './redis-node.js';

function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('real-Redis harness (startFleet / RedisNode)', () => {
  let fleet: RedisFleet;
  const pids: number[] = [];
  const dirs: string[] = [];

  beforeAll(async () => {
    fleet = await startFleet(3, { backend: 'local' });
  });

  afterAll(async () => {
    await fleet?.stop();
  });

  it('starts 3 distinct nodes answering PING over raw TCP', async () => {
    expect(fleet.nodes).toHaveLength(3);
    expect(new Set(fleet.urls).size).toBe(3);
    for (const node of fleet.nodes) {
      expect(node.url).toBe(`redis://127.0.0.1:${node.port}`);
      expect(node.running).toBe(true);
      expect(node.paused).toBe(false);
      expect(typeof node.pid).toBe('number');
      expect(pidAlive(node.pid!)).toBe(true);
      expect(await ping(node.port)).toBe(true);
      pids.push(node.pid!);
      dirs.push((node as RedisNode).dir!);
    }
  });

  it('checkedCommand rejects on an error reply, without the arguments after the second', async () => {
    const { port } = fleet.nodes[0]!;
    expect(await checkedCommand(port, ['CONFIG', 'SET', 'maxmemory-policy', 'noeviction'])).toBe('OK');
    const refused = await checkedCommand(port, ['ACL', 'SETUSER', 'u', '>secret-pw', '~a', 'no-such-rule']).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(RespError);
    expect((refused as Error).message).toMatch(new RegExp(`^ACL SETUSER on 127\\.0\\.0\\.1:${port} refused: ERR`));
    expect((refused as Error).message).not.toContain('secret-pw');
  });

  it('kill(i) makes the port refuse connections and the pid disappear', async () => {
    const node = fleet.nodes[0]!;
    const pid = node.pid!;
    expect(await rawCommand(node.port, ['SET', 'harness:key', 'v1'])).toBe('OK');
    expect(await rawCommand(node.port, ['GET', 'harness:key'])).toBe('v1');

    await fleet.kill(0);
    expect(node.running).toBe(false);
    expect(node.pid).toBeUndefined();
    expect(processExists(pid)).toBe(false);
    expect(await canConnect(node.port, 200)).toBe(false);
    await expect(rawCommand(node.port, ['PING'], { timeoutMs: 200 })).rejects.toThrow();
  });

  it('restart(i) comes back on the same port with data wiped', async () => {
    const node = fleet.nodes[0]!;
    const port = node.port;
    await fleet.restart(0);
    expect(node.port).toBe(port);
    expect(node.running).toBe(true);
    pids.push(node.pid!);
    expect(await ping(port)).toBe(true);
    expect(await rawCommand(port, ['GET', 'harness:key'])).toBeNull();
  });

  it('pause(i) stops answering, resume(i) answers again', async () => {
    const node = fleet.nodes[1]!;
    await fleet.pause(1);
    expect(node.paused).toBe(true);
    // The kernel still accepts the connection, but nobody replies.
    expect(await canConnect(node.port, 200)).toBe(true);
    const t0 = Date.now();
    expect(await ping(node.port, 200)).toBe(false);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(180);

    await fleet.resume(1);
    expect(node.paused).toBe(false);
    expect(await ping(node.port, 1000)).toBe(true);
  });

  it('stop() resumes paused nodes, kills every pid and removes tmp dirs', async () => {
    await fleet.pause(2);
    await fleet.stop();
    for (const node of fleet.nodes) {
      expect(node.running).toBe(false);
      expect(node.pid).toBeUndefined();
    }
    for (const pid of pids) expect(() => process.kill(pid, 0)).toThrow();
    for (const dir of dirs) expect(existsSync(dir)).toBe(false);
    expect(liveNodes().filter((n) => fleet.nodes.includes(n))).toHaveLength(0);
    // stop() is idempotent and never throws.
    await expect(fleet.stop()).resolves.toBeUndefined();
  });

  it('restart({ keepData: true }) with persistence keeps acknowledged writes across kill -9', async () => {
    const node = new RedisNode({ persistence: true });
    try {
      await node.start();
      const port = node.port;
      expect(await rawCommand(port, ['SET', 'durable', 'yes'])).toBe('OK');
      await node.kill();
      await node.restart({ keepData: true });
      expect(node.port).toBe(port);
      expect(await rawCommand(port, ['GET', 'durable'])).toBe('yes');
      await node.restart({ keepData: false });
      expect(await rawCommand(port, ['GET', 'durable'])).toBeNull();
    } finally {
      const pid = node.pid;
      await node.stop();
      if (pid !== undefined) expect(processExists(pid)).toBe(false);
    }
  });

  it('restart({ keepData: true }) resolves once the data is loaded: the next command gets no LOADING', async () => {
    const node = new RedisNode({ persistence: true });
    try {
      await node.start();
      // Enough data that loading it takes a while (INFO answers during the load; every other command gets LOADING).
      const fill = "for i = 1, 300000 do redis.call('SET', 'fill:' .. i, i) end return 1";
      for (let round = 0; round < 3; round++)
        expect(await rawCommand(node.port, ['EVAL', fill.replace("'fill:'", `'fill${round}:'`), '0'], { timeoutMs: 30_000 })).toBe(1);
      await node.kill();
      await node.restart({ keepData: true });
      expect(await rawCommand(node.port, ['GET', 'fill2:300000'])).toBe('300000');
    } finally {
      const pid = node.pid;
      await node.stop();
      if (pid !== undefined) expect(processExists(pid)).toBe(false);
    }
  });
});
