import { Cluster } from 'ioredis';
import type { LockNode, RedisClient } from './node.js';

type Wake = () => void;

/** How long a subscription outlives its last waiter, ms. */
const LINGER = 1000;

interface Subscription {
  /** waiter id -> wake */
  readonly waiters: Map<string, Wake>;
  /** Settles when every node confirmed (or refused) the subscription. */
  readonly confirmed: Promise<void>;
  ready: boolean;
  linger?: NodeJS.Timeout;
}

/**
 * Wakes waiting acquisitions when a holder releases, instead of polling: the
 * release script publishes the first waiter's id on the resource's queue
 * channel, and one subscriber connection per node (opened on first use)
 * dispatches it to that waiter in this process. Polling stays as the fallback
 * for a lost message or a node that cannot deliver it.
 */
export class WakeNotifier {
  private subscribers: RedisClient[] | undefined;
  private readonly channels = new Map<string, Subscription>();

  constructor(private readonly nodes: readonly LockNode[]) {}

  /** True while this process is subscribed to every one of `channels` (waiting on them now, or a moment ago). */
  isSubscribed(channels: readonly string[]): boolean {
    return channels.every((c) => this.channels.get(c)?.ready);
  }

  /**
   * Calls `wake` when a release names `waiter` on one of `channels`. With
   * `lookAgain`, also once when the nodes have confirmed the subscription: a
   * release after the caller's last attempt and before that would have been
   * missed. Returns a function that stops watching; the subscription itself
   * lingers a moment, so a process that waits again and again on one resource
   * does not subscribe each time.
   */
  watch(channels: readonly string[], waiter: string, wake: Wake, lookAgain: boolean): () => void {
    const subscribers = this.connect();
    const confirmations = channels.map((channel) => {
      let subscription = this.channels.get(channel);
      if (!subscription) {
        const created: Subscription = {
          waiters: new Map(),
          ready: false,
          confirmed: Promise.allSettled(subscribers.map((s) => s.subscribe(channel))).then(() => {
            created.ready = true;
          }),
        };
        subscription = created;
        this.channels.set(channel, created);
      }
      clearTimeout(subscription.linger);
      subscription.waiters.set(waiter, wake);
      return subscription.confirmed;
    });
    if (lookAgain) void Promise.all(confirmations).then(() => this.channels.get(channels[0]!)?.waiters.get(waiter)?.());
    return () => {
      for (const channel of channels) {
        const subscription = this.channels.get(channel);
        if (!subscription?.waiters.delete(waiter) || subscription.waiters.size > 0) continue;
        subscription.linger = setTimeout(() => {
          if (subscription.waiters.size > 0 || this.channels.get(channel) !== subscription) return;
          this.channels.delete(channel);
          for (const subscriber of subscribers) subscriber.unsubscribe(channel).catch(() => undefined);
        }, LINGER);
        subscription.linger.unref();
      }
    };
  }

  close(): void {
    for (const subscription of this.channels.values()) clearTimeout(subscription.linger);
    this.channels.clear();
    for (const subscriber of this.subscribers ?? []) subscriber.disconnect();
    this.subscribers = undefined;
  }

  private connect(): RedisClient[] {
    if (this.subscribers) return this.subscribers;
    this.subscribers = this.nodes.map((node) => {
      // A connection of its own: a subscribed connection cannot run scripts.
      const { client } = node;
      const subscriber: RedisClient =
        client instanceof Cluster ? client.duplicate() : client.duplicate({ lazyConnect: false, enableOfflineQueue: true });
      subscriber.on('error', () => undefined); // the lock connection reports node errors
      subscriber.on('message', (channel: string, waiter: string) => this.channels.get(channel)?.waiters.get(waiter)?.());
      return subscriber;
    });
    return this.subscribers;
  }
}
