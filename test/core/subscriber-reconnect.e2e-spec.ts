import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import net from 'node:net';
import { Redis } from 'ioredis';
import { connectionFor } from '../../lib/core/clients/connection-for.js';
import type { LockConnection } from '../../lib/core/connection.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';
import { until } from '../support/until.js';

/**
 * The wake-up subscriber's reconnects (issue 17, fault suite): a node lost
 * again right after it came back must not leave a rejected SUBSCRIBE behind
 * that no one catches (a fault-suite worker died of it), and the channel must
 * be subscribed again once the node stays.
 */
describe('the wake-up subscriber across reconnects', () => {
  let fleet: RedisFleet;
  let proxy: net.Server;
  let proxyUrl: string;
  /** While set, a SUBSCRIBE through the proxy is swallowed and its connection cut 20 ms later: the node dies before it answers. */
  let swallowSubscribe = false;
  const sockets = new Set<net.Socket>();
  const connections: LockConnection[] = [];
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => void unhandled.push(reason);

  beforeAll(async () => {
    fleet = await startFleet(1);
    const { port } = new URL(fleet.urls[0]!);
    proxy = net.createServer((client) => {
      const upstream = net.connect(Number(port), '127.0.0.1');
      for (const s of [client, upstream]) {
        sockets.add(s);
        s.on('error', () => undefined);
        s.on('close', () => (sockets.delete(s), client.destroy(), upstream.destroy()));
      }
      upstream.on('data', (d: Buffer) => client.write(d));
      client.on('data', (d: Buffer) => {
        if (swallowSubscribe && /subscribe/i.test(d.toString())) setTimeout(() => client.destroy(), 20);
        else upstream.write(d);
      });
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    proxyUrl = `redis://127.0.0.1:${(proxy.address() as net.AddressInfo).port}`;
    process.on('unhandledRejection', onUnhandled);
  });
  afterEach(() => {
    swallowSubscribe = false;
    connections.splice(0).forEach((c) => c.disconnect());
  });
  afterAll(async () => {
    process.off('unhandledRejection', onUnhandled);
    for (const s of sockets) s.destroy();
    await new Promise((resolve) => proxy?.close(resolve));
    await fleet?.stop();
  });

  const cutEverything = () => sockets.forEach((s) => s.destroy());

  it('leaves no unhandled rejection when the node is lost again before it answered the resubscribe, and the subscription is closed', async () => {
    const { connection } = connectionFor(proxyUrl);
    connections.push(connection);
    const subscription = connection.subscribe('wake:c1', () => undefined);
    await subscription.confirmed;
    swallowSubscribe = true;
    cutEverything();
    // Reconnected, resubscribed, and that SUBSCRIBE swallowed: the subscriber is closed while it is unanswered.
    await until(() => sockets.size > 0, 'the subscriber to reconnect');
    await new Promise((resolve) => setTimeout(resolve, 60));
    subscription.close();
    // A rejection is reported as unhandled once the microtasks after it ran: give it a turn of the event loop.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(unhandled.map(String)).toEqual([]);
  });

  it('subscribes the channel again after a reconnect', async () => {
    const { connection } = connectionFor(proxyUrl);
    connections.push(connection);
    const messages: string[] = [];
    const subscription = connection.subscribe('wake:c2', (m) => messages.push(m));
    await subscription.confirmed;
    cutEverything();
    const publisher = new Redis(fleet.urls[0]!);
    try {
      await until(async () => {
        await publisher.publish('wake:c2', 'c2.w1');
        return messages.length > 0;
      }, 'a message on the channel after the reconnect');
    } finally {
      publisher.disconnect();
      subscription.close();
    }
    expect(messages[0]).toBe('c2.w1');
  });
});
