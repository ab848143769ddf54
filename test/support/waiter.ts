import type { Redlock, RedlockOptions } from '../../lib/index.js';
import { until } from './until.js';

/** Whether a client's wake channel is subscribed on every node it could reach. */
export const subscribed = (redlock: Redlock): boolean =>
  (redlock as unknown as { notifier: { isSubscribed: boolean } }).notifier.isSubscribed;

/**
 * A waiting client for the hand-over tests: a 5 s retry delay (so that only a
 * release ends its waits in time), subscribed before it waits (so that it makes
 * no extra attempt when its subscriptions are confirmed), waiting up to its node
 * timeout (1 s) for the rest of a quorum of hand-overs and, a semaphore's, for every
 * node's (unless `shortGrace`), with each
 * of its acquisitions' `handedOver`, in order.
 */
export async function handOverWaiter(
  client: (options: Partial<RedlockOptions>) => Redlock,
  { shortGrace = false } = {},
): Promise<{ waiter: Redlock; handedOver: boolean[] }> {
  const handedOver: boolean[] = [];
  const waiter = client({
    retryDelay: 5000,
    retryJitter: 0,
    onEvent: (e) => void (e.type === 'acquired' && handedOver.push(e.handedOver)),
    // These tests check the hand-over itself. A node's answer to the first (refused) attempt read
    // past the node timeout under load leaves that node out of the hand-over's quorum, and a
    // hand-over message read late ends the wait for the rest of a quorum: either turns the
    // hand-over into an attempt (a full test run on 2 cores once gave 2 attempts within 200 ms).
    ...(shortGrace ? {} : { nodeTimeout: 1000 }),
  });
  // The node timeout then bounds the wait for the rest of a quorum of hand-overs, not 10 ms.
  // `shortGrace`: the library's own, for the test of that attempt.
  if (!shortGrace) {
    const { loop } = waiter as unknown as { loop: { handOverGrace: number; handOverRest: number } };
    loop.handOverGrace = Infinity;
    loop.handOverRest = Infinity; // a semaphore's wait for every node's hand-over, too
  }
  await until(() => subscribed(waiter), 'the waiter subscribed');
  return { waiter, handedOver };
}
