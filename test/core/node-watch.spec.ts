import { describe, expect, it } from '@jest/globals';
import { EventEmitter } from 'node:events';
import type { LockEvent } from '../../lib/index.js';
import type { LockNode } from '../../lib/core/node.js';
import { watchNodes } from '../../lib/core/node-watch.js';

// What a node's connection reports, without a server: the errors of reconnects that fail.
function watched(): { connection: EventEmitter; messages: () => string[] } {
  const connection = new EventEmitter();
  const node = {
    label: 'cluster(127.0.0.1:7000)',
    connection: {
      isCluster: true,
      on: (event: string, listener: () => void) => (connection.on(event, listener), () => connection.off(event, listener)),
    },
    watchHung: () => undefined,
    watchEviction: () => () => undefined, // its INFO needs a server: eviction.e2e-spec.ts
  } as unknown as LockNode;
  const events: LockEvent[] = [];
  watchNodes([node], { restartGuard: 0, autoWindow: () => 0, emit: (event) => events.push(event) });
  return { connection, messages: () => events.flatMap((e) => (e.type === 'node-error' ? [e.message] : [])) };
}

describe('node errors while a node stays down', () => {
  it('reports each message once, however the shards of a cluster alternate theirs; anew after the node was ready', () => {
    const { connection, messages } = watched();
    for (let round = 0; round < 3; round++) {
      connection.emit('error', new Error('connect ECONNREFUSED 127.0.0.1:7001'));
      connection.emit('error', new Error('connect ECONNREFUSED 127.0.0.1:7002'));
    }
    expect(messages()).toEqual(['connect ECONNREFUSED 127.0.0.1:7001', 'connect ECONNREFUSED 127.0.0.1:7002']);
    connection.emit('ready');
    connection.emit('error', new Error('connect ECONNREFUSED 127.0.0.1:7001'));
    expect(messages()).toHaveLength(3);
  });
});
