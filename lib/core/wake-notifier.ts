import type { Subscription } from './connection.js';
import type { LockNode } from './node.js';

type Wake = () => void;

/**
 * Wakes waiting acquisitions when a holder releases, instead of polling.
 *
 * Each lock client has a channel of its own, `<prefix>wake:<client id>`, and a
 * waiter's id starts with its client's id. The release script reads the first
 * waiter of the resource's queue and publishes that id on that waiter's
 * client's channel: only the process that must act is woken (a channel per
 * resource would wake every waiting process on every release, which under
 * contention costs more than the hand-off itself). One subscriber connection
 * per node, opened on the first wait and kept until `close()`. Polling stays
 * as the fallback for a lost message or a node that cannot deliver it.
 */
export class WakeNotifier {
  // The nodes and the subscriber connections carry the nodes' credentials: truly private.
  readonly #nodes: readonly LockNode[];
  #subscriptions: Subscription[] | undefined;
  #closed = false;
  /** Settles when every node confirmed (or refused) the subscription. */
  private confirmed: Promise<void> | undefined;
  private ready = false;
  /** waiter id -> wake */
  private readonly waiters = new Map<string, Wake>();

  constructor(
    nodes: readonly LockNode[],
    /** This client's channel. */
    readonly channel: string,
  ) {
    this.#nodes = nodes;
  }

  /** True once this client's channel is subscribed on every node that could be reached. */
  get isSubscribed(): boolean {
    return this.ready;
  }

  /**
   * Calls `wake` when a release names `waiter`. With `lookAgain`, also once when
   * the nodes have confirmed the subscription: a release after the caller's
   * last attempt and before that would have been missed. Returns a function
   * that stops watching.
   */
  watch(waiter: string, wake: Wake, lookAgain: boolean): () => void {
    this.waiters.set(waiter, wake);
    const confirmed = this.subscribe();
    if (lookAgain) void confirmed.then(() => this.waiters.get(waiter)?.());
    return () => void this.waiters.delete(waiter);
  }

  /**
   * Opens the subscriptions now instead of at the first wait, so that the first
   * contended acquisition does not pay for connecting them (5 connections, then
   * a SUBSCRIBE each: tens of ms, seen as the longest wait under contention).
   */
  start(): void {
    void this.subscribe();
  }

  close(): void {
    this.#closed = true;
    this.waiters.clear();
    for (const subscription of this.#subscriptions ?? []) subscription.close();
    this.#subscriptions = undefined;
    this.confirmed = undefined;
    this.ready = false;
  }

  private subscribe(): Promise<void> {
    if (this.confirmed) return this.confirmed;
    // Closed: no connection is opened again (it would keep the process alive).
    if (this.#closed) return Promise.resolve();
    this.#subscriptions = this.#nodes.map((node) => node.connection.subscribe(this.channel, (waiter) => this.waiters.get(waiter)?.()));
    const confirmed = Promise.all(this.#subscriptions.map((s) => s.confirmed)).then(() => {
      if (this.confirmed === confirmed) this.ready = true;
    });
    this.confirmed = confirmed;
    return confirmed;
  }
}
