/** What the adapters listen on: an application's client (an EventEmitter). */
export interface Listenable {
  on(event: string, listener: (...args: any[]) => void): unknown;
  off(event: string, listener: (...args: any[]) => void): unknown;
}

type Listener = (...args: any[]) => void;

/** The one listener of an event on a client, and the lock clients' listeners it calls. */
interface Hub {
  readonly listeners: Set<{ readonly listener: Listener }>;
  readonly dispatch: Listener;
}

const hubs = new WeakMap<Listenable, Map<string, Hub>>();

/**
 * Adds `listener` for `event` on `client` through one listener per client and
 * event, however many lock clients (and nodes of theirs) share the client;
 * returns what removes it, and the last removal takes that one listener off.
 * An application hands its own client to several lock clients (a module per
 * namespace, a testing module per test): with a few listeners each, the
 * client passed Node's limit of ten per event and the application's logs got a
 * MaxListenersExceededWarning. Raising the limit would change the
 * application's own client.
 */
export function listenShared(client: Listenable, event: string, listener: Listener): () => void {
  let events = hubs.get(client);
  if (!events) hubs.set(client, (events = new Map()));
  let hub = events.get(event);
  if (!hub) {
    const listeners = new Set<{ readonly listener: Listener }>();
    // A copy: a listener may remove itself (or add another) while it runs.
    const dispatch = (...args: unknown[]) => [...listeners].forEach((entry) => entry.listener(...args));
    hub = { listeners, dispatch };
    events.set(event, hub);
    client.on(event, dispatch);
  }
  const entry = { listener };
  const { listeners, dispatch } = hub;
  listeners.add(entry);
  return () => {
    if (!listeners.delete(entry) || listeners.size > 0) return;
    events.delete(event);
    client.off(event, dispatch);
  };
}
