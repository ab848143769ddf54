import type { Subscription } from './connection.js';
import type { NodeErrorEvent } from './events.js';
import { withoutCredentials } from './log-safe.js';
import type { LockNode } from './node.js';

/** A release handed the lock over to the waiter on one node (see GRANT in scripts.ts). */
export interface Grant {
  /** The attempt whose queue entry the release read. */
  readonly attempt: number;
  /** The fencing token the node issued (0 with fencing off). */
  readonly token: number;
}

/**
 * Called for each message naming the waiter: `node` is the index of the node it came from; `grant` when it hands the lock over;
 * `free`, a semaphore's slot freed with nobody queued for it (see RELEASE), for the waiter to take.
 */
export type Wake = (node?: number, grant?: Grant, free?: number) => void;

/**
 * Wakes waiting acquisitions when a holder releases, instead of polling, and
 * tells them when the release handed them the lock.
 *
 * Each lock client has a channel of its own, `<prefix>wake:<client id>`, and a
 * waiter's id starts with its client's id. The release script reads the first
 * waiter of the resource's queue and publishes that id on that waiter's
 * client's channel, followed by the attempt and token when it handed the lock
 * over (GRANT in scripts.ts): only the process that must act is woken (a channel per
 * resource would wake every waiting process on every release, which under
 * contention costs more than the hand-off itself). One subscriber connection
 * per node, opened on the first wait and kept until `close()`. Polling stays
 * as the fallback for a lost message or a node that cannot deliver it.
 */
export class WakeNotifier {
  // The nodes and the subscriber connections carry the nodes' credentials: truly private.
  readonly #nodes: readonly LockNode[];
  /**
   * Per node, whether another node is a database of the same server. Pub/sub
   * ignores databases: such a node's subscription hears every node's messages
   * on that server, so a hand-over it hears may come from another database and
   * counts as a wake-up only (the attempt that follows finds the lock where it
   * was handed over). Counted per node, one release would look like a quorum.
   */
  readonly #sharesServer: readonly boolean[];
  #subscriptions: Subscription[] | undefined;
  #closed = false;
  /** Settles when every node confirmed (or refused) the subscription. */
  private confirmed: Promise<void> | undefined;
  private ready = false;
  /**
   * waiter id -> wake. An object without a prototype, not a Map: entries come and
   * go with every wait, and a Map's rebuilt tables stay linked to each other,
   * which keeps the waits' objects alive through minor GCs (see bag.ts). Measured
   * with 4 callers on one resource: 1.3 KB promoted per acquisition with a Map, 1.0 without.
   */
  private waiters: Record<string, Wake | undefined> = Object.create(null);

  /** This client's channel. */
  readonly channel: string;

  constructor(
    nodes: readonly LockNode[],
    /** The channels' prefix, `<prefix>wake:`. */
    private readonly wakePrefix: string,
    clientId: string,
    /** Told when a node that is up refused the subscription (an ACL user without the channels, say). */
    private readonly report: (event: NodeErrorEvent) => void = () => undefined,
  ) {
    this.#nodes = nodes;
    this.channel = `${wakePrefix}${clientId}`;
    const servers = nodes.map((node) => serverOf(node.identity));
    this.#sharesServer = servers.map((server, i) => servers.some((other, j) => j !== i && other === server));
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
    this.waiters[waiter] = wake;
    const confirmed = this.subscribe();
    if (lookAgain) void confirmed.then(() => this.waiters[waiter]?.());
    return () => void delete this.waiters[waiter];
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
    this.waiters = Object.create(null);
    for (const subscription of this.#subscriptions ?? []) subscription.close();
    this.#subscriptions = undefined;
    this.confirmed = undefined;
    this.ready = false;
  }

  /** A message from node `node`: '<waiter>' (a wake-up), '<waiter> <attempt> <token>' (a hand-over) or '<waiter> #<slot>' (a wake-up to a semaphore's free slot). */
  private deliver(node: number, message: string): void {
    const space = message.indexOf(' ');
    if (space < 0) return this.waiters[message]?.(node);
    const wake = this.waiters[message.slice(0, space)];
    if (!wake) return;
    if (this.#sharesServer[node]) return wake(node);
    // '<waiter> #<slot>': a semaphore's slot free for it.
    if (message.charCodeAt(space + 1) === 35) return wake(node, undefined, Number(message.slice(space + 2)));
    const second = message.indexOf(' ', space + 1);
    wake(node, { attempt: Number(message.slice(space + 1, second)), token: Number(message.slice(second + 1)) });
  }

  /**
   * A subscription the server refused is reported; a node that is down reports itself.
   * Refused by the server: an error reply (its code first: `NOPERM ...`), or any
   * failure while the lock connection is up. Not the lock connection's state alone:
   * the subscriber connects on its own, and its refusal may come before the lock
   * connection's first 'ready' (a node-error went missing under load in CI).
   */
  private refused(node: number, refusal: unknown): void {
    if (refusal === undefined || this.#closed) return;
    const why = withoutCredentials(refusal instanceof Error ? refusal.message : String(refusal));
    if (!this.#nodes[node]!.connection.isReady && !SERVER_REPLY.test(why)) return;
    this.report({
      type: 'node-error',
      at: Date.now(),
      node: this.#nodes[node]!.label,
      message: `cannot subscribe to this client's wake channel, so its waiters learn of releases on this node by polling only (an ACL user needs the channels &${this.wakePrefix}*): ${why}`,
    });
  }

  private subscribe(): Promise<void> {
    if (this.confirmed) return this.confirmed;
    // Closed: no connection is opened again (it would keep the process alive).
    if (this.#closed) return Promise.resolve();
    this.#subscriptions = this.#nodes.map((node, i) => node.connection.subscribe(this.channel, (message) => this.deliver(i, message)));
    const confirmed = Promise.all(this.#subscriptions.map((s, i) => s.confirmed.then((refusal) => this.refused(i, refusal)))).then(() => {
      if (this.confirmed === confirmed) this.ready = true;
    });
    this.confirmed = confirmed;
    return confirmed;
  }
}

/** An error reply from a server starts with its code in capitals (`NOPERM`, `ERR`); a client's own errors do not. */
const SERVER_REPLY = /^[A-Z]{2,}\s/;

/** A node's server: its identity without the database (`host:port/2` -> `host:port`). */
function serverOf(identity: string): string {
  return identity.replace(/\/\d+$/, '');
}
