import { describe, expect, it } from '@jest/globals';
import type { NodeErrorEvent } from '../../lib/core/events.js';
import type { LockNode } from '../../lib/core/node.js';
import { WakeNotifier } from '../../lib/core/wake-notifier.js';

// A node whose lock connection is still making its first connection (not ready), and
// whose wake-up subscription settles with `refusal`: the order the two take is a race
// (the subscriber is a connection of its own, opened when the lock client is made).
async function reported(refusal: Error): Promise<NodeErrorEvent[]> {
  const node = {
    label: '127.0.0.1:6390/0',
    identity: '127.0.0.1:6390/0',
    connection: { isReady: false, subscribe: () => ({ confirmed: Promise.resolve(refusal), close: () => undefined }) },
  } as unknown as LockNode;
  const events: NodeErrorEvent[] = [];
  const notifier = new WakeNotifier([node], 'redlock:wake:', 'c1', (event) => events.push(event));
  notifier.start();
  await new Promise((resolve) => setImmediate(resolve));
  notifier.close();
  return events;
}

describe('a wake-up subscription refused', () => {
  it('is reported when the server said no, though the lock connection is not ready yet', async () => {
    const events = await reported(new Error("NOPERM User nochan has no permissions to access the 'redlock:wake:c1' channel"));
    expect(events).toEqual([
      expect.objectContaining({ type: 'node-error', node: '127.0.0.1:6390/0', message: expect.stringMatching(/&redlock:wake:\*.*NOPERM/) }),
    ]);
  });

  it('is not reported when the connection failed (a node that is down reports itself)', async () => {
    expect(await reported(new Error('Connection is closed.'))).toEqual([]);
  });
});
