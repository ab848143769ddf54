import { Cluster } from 'ioredis';
import type { LockNode, RedisClient } from './node.js';

type Wake = () => void;

/**
 * Wakes waiting acquisitions when a holder releases, instead of polling: the
 * release script publishes the first waiter's id on the resource's queue
 * channel, and one subscriber connection per node (opened on first use)
 * dispatches it to that waiter in this process. Polling stays as the fallback
 * for a lost message or a node that cannot deliver it.
 */
export class WakeNotifier {
  private subscribers: RedisClient[] | undefined;
  /** channel -> waiter id -> wake */
  private readonly watchers = new Map<string, Map<string, Wake>>();

  constructor(private readonly nodes: readonly LockNode[]) {}

  /**
   * Calls `wake` when a release names `waiter` on one of `channels`, and once
   * when a node confirms the subscription (a release just before it would have
   * been missed: the waiter should look again). Returns a function that stops.
   */
  watch(channels: readonly string[], waiter: string, wake: Wake): () => void {
    const subscribers = this.connect();
    for (const channel of channels) {
      let byWaiter = this.watchers.get(channel);
      if (!byWaiter) {
        byWaiter = new Map();
        this.watchers.set(channel, byWaiter);
        for (const subscriber of subscribers) {
          subscriber.subscribe(channel).then(
            () => this.watchers.get(channel)?.forEach((w) => w()),
            () => undefined,
          );
        }
      } else {
        queueMicrotask(wake); // already subscribed
      }
      byWaiter.set(waiter, wake);
    }
    return () => {
      for (const channel of channels) {
        const byWaiter = this.watchers.get(channel);
        if (!byWaiter?.delete(waiter) || byWaiter.size > 0) continue;
        this.watchers.delete(channel);
        for (const subscriber of subscribers) subscriber.unsubscribe(channel).catch(() => undefined);
      }
    };
  }

  close(): void {
    this.watchers.clear();
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
      subscriber.on('message', (channel: string, waiter: string) => this.watchers.get(channel)?.get(waiter)?.());
      return subscriber;
    });
    return this.subscribers;
  }
}
