import type { Subscription } from '../connection.js';

/** The GLIDE client shape a subscriber is made from and closed through. */
interface GlideSubscribable {
  close(errorMessage?: string): void;
}

/** `Decoder.String`. */
const STRINGS = 1;
/** `PubSubChannelModes.Exact` (the same value for the cluster client). */
const EXACT_CHANNELS = 0;
/** Pause before creating a subscriber again after a failure (a node down), ms; doubled after each, up to `RETRY_MAX`. */
const RETRY_DELAY = 1000;
/**
 * Longest pause between tries. A failure may be a refusal (an ACL user without
 * the channel), which GLIDE's connect retries many times a second until its
 * connect timeout: that burst is not repeated every second for the client's life.
 */
const RETRY_MAX = 10_000;

/**
 * Subscribes to `channel` on a client of its own: GLIDE subscribes only when
 * a client is created (`pubsubSubscriptions`, with a callback), so a new client
 * of the same class is created from `config`, the node client's own
 * configuration. A node that is down at first is tried again after
 * `RETRY_DELAY` ms, then at growing pauses, until it answers or the subscription is closed, as an
 * ioredis duplicate would reconnect; once created, GLIDE resubscribes after
 * reconnects itself.
 */
export function glideSubscription(
  factory: (config: object) => Promise<GlideSubscribable>,
  config: object,
  channel: string,
  onMessage: (message: string) => void,
): Subscription {
  let closed = false;
  let pause = RETRY_DELAY;
  let subscriber: GlideSubscribable | undefined;
  let retry: NodeJS.Timeout | undefined;
  const create = (): Promise<unknown> =>
    factory({
      ...config,
      // Pub/sub needs RESP3; the subscriber neither connects lazily nor shares the user's client-side cache.
      protocol: undefined,
      lazyConnect: false,
      clientSideCache: undefined,
      defaultDecoder: STRINGS,
      pubsubSubscriptions: {
        channelsAndPatterns: { [EXACT_CHANNELS]: new Set([channel]) },
        callback: (msg: { message: unknown }) => onMessage(String(msg.message)),
      },
    }).then(
      (client) => {
        if (closed) unsubscribeAndClose(client, channel);
        else subscriber = client;
      },
      (error: unknown) => {
        if (closed) return undefined;
        retry = setTimeout(() => void create(), pause);
        pause = Math.min(pause * 2, RETRY_MAX);
        retry.unref();
        return error;
      },
    );
  return {
    // GLIDE's createClient resolves once the subscription is in place; a failed first try settles it too.
    confirmed: create(),
    close: () => {
      closed = true;
      clearTimeout(retry);
      if (subscriber) unsubscribeAndClose(subscriber, channel);
    },
  };
}

/**
 * Closes a subscriber client. Closed while subscribed, GLIDE's core keeps
 * trying to restore the subscription and logs a failure at ERROR each time:
 * unsubscribed first (GLIDE 2.1 and later can), it lets go quietly.
 */
function unsubscribeAndClose(client: GlideSubscribable, channel: string): void {
  const unsubscribe = (client as { unsubscribeLazy?: (channels: Set<string>) => Promise<void> }).unsubscribeLazy;
  if (typeof unsubscribe !== 'function') return client.close();
  const close = () => client.close();
  unsubscribe.call(client, new Set([channel])).then(close, close);
}
