import { afterEach, describe, expect, it } from '@jest/globals';
import { Cluster, type RedisOptions } from 'ioredis';
import { InvalidArgumentError, Redlock } from '../../lib/index.js';
import { ACQUIRE } from '../../lib/core/scripts.js';
import { connectionFor } from '../../lib/core/clients/connection-for.js';
import { isIoredis } from '../../lib/core/clients/ioredis.connection.js';
import { asNodeSpecs, createMemoryNodes } from '../../lib/testing/index.js';

const clients: Redlock[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
});

describe('the node boundary (issue 14 item 4)', () => {
  it('takes the in-memory node through the ioredis adapter, as a real client: its scripts are loaded when it is ready', async () => {
    const nodes = createMemoryNodes(3);
    expect(isIoredis(nodes[0]!)).toBe(true);
    const redlock = new Redlock({ nodes: asNodeSpecs(nodes) });
    clients.push(redlock);
    await redlock.ready();
    // Loaded by SCRIPT LOAD on the ready connection, not by a first NOSCRIPT + EVAL: EVALSHA finds it at once
    // (whatever the script then makes of these arguments).
    const outcome = await nodes[0]!.evalsha(ACQUIRE.sha, 0).then(
      () => 'ran',
      (error: Error) => error.message,
    );
    expect(outcome).not.toMatch(/NOSCRIPT/);
  });

  it('refuses an object that is neither an options object nor a known client, naming its class only', () => {
    class SomeClient {
      password = 'hunter2';
      evalsha() {}
    }
    let error: unknown;
    try {
      new Redlock({ nodes: [new SomeClient() as never] });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect((error as InvalidArgumentError).argument).toBe('nodes[0]');
    expect((error as Error).message).toMatch(/a SomeClient is not a client this library knows/);
    // What it got is named alike, not "an object (Object)".
    expect((error as Error).message).toMatch(/got an object \(SomeClient\)/);
    expect((error as Error).message).not.toContain('hunter2');
  });

  it('names a Sentinel-managed node by its group and sentinels, in any order and spelling, never by credentials (issue 15)', () => {
    const identity = (options: RedisOptions) => {
      const { connection } = connectionFor({ lazyConnect: true, ...options });
      connection.disconnect();
      expect(connection.failsOver).toBe(true);
      return connection.identity;
    };
    const sentinels = [{ host: 'localhost', port: 26380 }, { host: '10.0.0.7' }];
    const secrets = { password: 'hunter2', sentinelPassword: 's3cret', username: 'locker', sentinelUsername: 'watcher' };
    const named = identity({ sentinels, name: 'locks', ...secrets });
    expect(named).toBe('sentinel(locks at 10.0.0.7:26379,127.0.0.1:26380)/0');
    expect(
      identity({
        sentinels: [
          { host: '10.0.0.7', port: 26379 },
          { host: '127.0.0.1', port: 26380 },
        ],
        name: 'locks',
      }),
    ).toBe(named);
    // Another group, another deployment with a group of the same name, another database: other nodes.
    expect(identity({ sentinels, name: 'other' })).not.toBe(named);
    expect(identity({ sentinels: [{ host: '10.0.0.8' }], name: 'locks' })).not.toBe(named);
    expect(identity({ sentinels, name: 'locks', db: 1 })).toBe('sentinel(locks at 10.0.0.7:26379,127.0.0.1:26380)/1');
  });

  it('names the Sentinel group a node given twice belongs to, not ***: the name is no credential', () => {
    // Nothing listens there: the nodes are refused before any connection matters.
    const group = { sentinels: [{ host: '127.0.0.1', port: 1 }], name: 'orders-locks', lazyConnect: true, password: 'hunter2' };
    let error: unknown;
    try {
      new Redlock({ nodes: [group, { ...group }, 'redis://127.0.0.1:1'] });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect((error as Error).message).toContain('a server different from nodes[0]');
    expect((error as Error).message).toContain('sentinel(orders-locks at 127.0.0.1:1)/0');
    expect((error as Error).message).not.toContain('hunter2');
  });

  it('names a Cluster node by its seeds, written as host:port whatever their spelling, never by credentials', () => {
    const cluster = new Cluster(
      ['redis://:s3cret@localhost:7000', 'redis://locker:s3cret@10.0.0.7:7001', '10.0.0.8:7002', { host: '10.0.0.9' }],
      {
        lazyConnect: true,
        redisOptions: { password: 's3cret' },
      },
    );
    const { connection } = connectionFor(cluster);
    expect(connection.identity).toBe('cluster(10.0.0.7:7001,10.0.0.8:7002,10.0.0.9:6379,127.0.0.1:7000)');
    connection.disconnect();
  });

  it('opens an ioredis connection of its own for a plain options object', () => {
    const { connection, owned } = connectionFor({ host: 'localhost', port: 7001, db: 2, lazyConnect: true });
    expect(owned).toBe(true);
    expect(connection.identity).toBe('127.0.0.1:7001/2');
    connection.disconnect();
  });
});
