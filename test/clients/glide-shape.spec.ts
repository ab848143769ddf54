import { afterEach, describe, expect, it, jest } from '@jest/globals';
import { inspect } from 'node:util';
import { InvalidArgumentError, Redlock } from '../../lib/index.js';
import { connectionFor } from '../../lib/core/clients/connection-for.js';
import { GlideBatcher } from '../../lib/core/clients/glide-batch.js';
import { glideSubscription } from '../../lib/core/clients/glide-subscriber.js';
import { isGlide } from '../../lib/core/clients/glide.connection.js';
import { isIoredis } from '../../lib/core/clients/ioredis.connection.js';

/** GLIDE's client shape, without the package: the adapter reads no more than this. */
class FakeGlideClient {
  static createClient(): Promise<FakeGlideClient> {
    return Promise.resolve(new FakeGlideClient({}));
  }
  constructor(readonly config: object) {}
  customCommand(): Promise<unknown> {
    return new Promise(() => undefined); // never answers: these tests send nothing that needs it
  }
  invokeScript(): Promise<unknown> {
    return Promise.resolve(null);
  }
  getStatistics(): object {
    return {};
  }
  close(): void {}
}

class FakeGlideClusterClient extends FakeGlideClient {
  invokeScriptWithRoute(): Promise<unknown> {
    return Promise.resolve(null);
  }
}

describe('GLIDE clients, told by shape', () => {
  it('are named by their addresses (one spelling per host, sorted) and database, never by their credentials', () => {
    const client = new FakeGlideClient({
      addresses: [{ host: 'LOCALHOST', port: 7000 }, { host: '10.0.0.2' }],
      databaseId: 3,
      credentials: { username: 'app', password: 'hunter2' },
    });
    expect(isGlide(client)).toBe(true);
    expect(isIoredis(client)).toBe(false);
    const { connection, owned } = connectionFor(client);
    expect(owned).toBe(false); // the application's client: never closed by the lock client
    expect(connection.identity).toBe('10.0.0.2:6379,127.0.0.1:7000/3');
    expect(connection.isCluster).toBe(false);
    // A primary and its replica: the restart guard takes a new run id for a failover.
    expect(connection.failsOver).toBe(true);
    expect(connectionFor(new FakeGlideClient({ addresses: [{ host: '127.0.0.1', port: 7000 }] })).connection.failsOver).toBe(false);
    expect(inspect(connection, { depth: 5, showHidden: true })).not.toContain('hunter2');
    // Nor the part that pipelines its commands, which holds the client as well.
    expect(inspect(new GlideBatcher(client, {}), { depth: 5, showHidden: true })).not.toContain('hunter2');
  });

  it('tells a cluster client by its cluster-only entry points, and names it by its seeds', () => {
    const client = new FakeGlideClusterClient({
      addresses: [
        { host: '127.0.0.1', port: 7002 },
        { host: '127.0.0.1', port: 7001 },
      ],
    });
    const { connection } = connectionFor(client);
    expect(connection.isCluster).toBe(true);
    expect(connection.identity).toBe('cluster(127.0.0.1:7001,127.0.0.1:7002)');
  });

  it('one server given as a GLIDE client and as a URL is one node, refused', () => {
    const client = new FakeGlideClient({ addresses: [{ host: '127.0.0.1', port: 7000 }] });
    expect(() => new Redlock({ nodes: [client, 'redis://localhost:7000', 'redis://localhost:7001'] })).toThrow(InvalidArgumentError);
  });

  it('an object with GLIDE’s methods but no client factory is no GLIDE client', () => {
    const { createClient: _, ...notAClass } = { createClient: 1 };
    const lookalike = Object.assign(Object.create({ constructor: notAClass }) as object, {
      customCommand: () => undefined,
      invokeScript: () => undefined,
      getStatistics: () => undefined,
      close: () => undefined,
    });
    expect(isGlide(lookalike)).toBe(false);
  });
});

describe('the GLIDE wake-up subscriber', () => {
  afterEach(() => {
    jest.useRealTimers();
  });

  it('is tried again at growing pauses after failures (a refusal makes GLIDE retry SUBSCRIBE in a burst each time)', async () => {
    jest.useFakeTimers();
    let tries = 0;
    const refused = () => (tries++, Promise.reject(new Error('Connection error: Timeout')));
    const subscription = glideSubscription(refused, {}, 'redlock:wake:x', () => undefined);
    expect(await subscription.confirmed).toBeInstanceOf(Error);
    // 1 s, 2 s, 4 s, 8 s, then every 10 s: 5 tries in the first 15 s, not 15.
    await jest.advanceTimersByTimeAsync(15_000);
    expect(tries).toBe(5);
    await jest.advanceTimersByTimeAsync(60_000);
    expect(tries).toBe(11);
    subscription.close();
  });
});
