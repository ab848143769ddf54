/**
 * A process stalled past the node timeout (a GC pause, a long synchronous
 * handler, a loaded host) after its commands went out: the replies that
 * arrived meanwhile wait in the sockets, and timers run before sockets are
 * read. Those nodes answered in time; they must not count as timed out.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { connect, type Socket } from 'node:net';
import { once } from 'node:events';
import type { LockNode } from '../../lib/core/node.js';
import { broadcast } from '../../lib/core/round.js';
import type { Done } from '../../lib/core/script.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';

let fleet: RedisFleet;
const sockets: Socket[] = [];
beforeAll(async () => {
  fleet = await startFleet(3);
});
afterAll(async () => {
  sockets.forEach((s) => s.destroy());
  await fleet.stop();
});

/** Blocks this process for `ms`, as a GC pause or a synchronous handler would. */
const stall = (ms: number) => {
  const until = performance.now() + ms;
  while (performance.now() < until);
};

describe('a round whose process stalls after sending', () => {
  it('counts the replies that arrived during the stall, not a timeout', async () => {
    const nodes = await Promise.all(
      fleet.nodes.map(async (node, i) => {
        const socket = connect(node.port, '127.0.0.1');
        sockets.push(socket);
        await once(socket, 'connect');
        const waiting: Done[] = [];
        socket.on('data', () => waiting.shift()?.(undefined, 'PONG'));
        return { label: `node${i}`, isStalled: () => false, socket, waiting };
      }),
    );
    const send = (node: (typeof nodes)[number], done: Done) => {
      node.waiting.push(done);
      node.socket.write('PING\r\n'); // written at once: the socket is connected and idle
      // After the last write: the servers answer while this process is stalled.
      if (node === nodes.at(-1)) stall(300);
    };
    const round = await broadcast({
      nodes: nodes as unknown as (LockNode & (typeof nodes)[number])[],
      send,
      classify: () => ({ outcome: 'ok' }),
      quorum: 2,
      timeout: 20,
      until: 'all',
    });
    expect(round.reports.map((r) => r.outcome)).toEqual(['ok', 'ok', 'ok']);
  });
});
