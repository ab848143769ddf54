import type { Redlock, RedlockOptions } from '../../lib/index.js';
import { until } from './until.js';

/** Whether a client's wake channel is subscribed on every node it could reach. */
export const subscribed = (redlock: Redlock): boolean =>
  (redlock as unknown as { notifier: { isSubscribed: boolean } }).notifier.isSubscribed;

/**
 * A waiting client for the hand-over tests: a 5 s retry delay (so that only a
 * release ends its waits in time), subscribed before it waits (so that it makes
 * no extra attempt when its subscriptions are confirmed), waiting up to its node
 * timeout for the rest of a quorum of hand-overs (unless `shortGrace`), with each
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
  });
  // The node timeout (250 ms, the test clients') bounds the wait for the rest of a quorum of hand-overs, not 10 ms:
  // these tests check the hand-over itself, which a node's message read late under load would turn into an attempt.
  // `shortGrace`: the library's own, for the test of that attempt.
  if (!shortGrace) (waiter as unknown as { loop: { handOverGrace: number } }).loop.handOverGrace = Infinity;
  await until(() => subscribed(waiter), 'the waiter subscribed');
  return { waiter, handedOver };
}
