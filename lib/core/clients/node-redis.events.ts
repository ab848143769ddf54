import type { LockConnection } from '../connection.js';
import { listenShared } from './shared-listeners.js';

/** What both node-redis clients share with an EventEmitter. */
export interface EventSource {
  readonly isOpen: boolean;
  readonly isReady?: boolean;
  on(event: string, listener: (...args: any[]) => void): unknown;
  off(event: string, listener: (...args: any[]) => void): unknown;
}

type Listener = (error?: any) => void;

/** Adds `listener` for each of `events`; returns what removes them all. */
function listen(client: EventSource, events: readonly string[], listener: Listener): () => void {
  const removers = events.map((event) => listenShared(client, event, listener));
  return () => removers.forEach((remove) => remove());
}

/**
 * The lock connection's events from a standalone node-redis client's (the
 * same in v4, v5 and v6, checked against each):
 * - a dropped connection is an 'error' (SocketClosedUnexpectedlyError) emitted
 *   once `isReady` is false; node-redis then rejects the commands in flight
 *   itself and reconnects. That is `lost`, once per ready period: a failed
 *   reconnect attempt is an 'error' too;
 * - node-redis gives up without an 'end' when its reconnect strategy says
 *   stop: `isOpen` is false at that 'error' (v6 also says 'terminated'). That,
 *   or 'end' (closed by the application), is `end`, once per open period.
 */
export function clientEvents(client: EventSource): LockConnection['on'] {
  return ((event: 'ready' | 'lost' | 'end' | 'error', listener: Listener) => {
    switch (event) {
      case 'ready':
      case 'error':
        return listen(client, [event], listener);
      case 'lost': {
        let up = client.isReady === true;
        const offReady = listen(client, ['ready'], () => (up = true));
        const offDown = listen(client, ['error', 'end'], () => {
          if (!up || client.isReady) return;
          up = false;
          listener();
        });
        return () => (offReady(), offDown());
      }
      case 'end': {
        let open = client.isOpen;
        const offOpen = listen(client, ['connect', 'ready'], () => (open = true));
        const offEnd = listen(client, ['end', 'error', 'terminated'], () => {
          if (!open || client.isOpen) return;
          open = false;
          listener();
        });
        return () => (offOpen(), offEnd());
      }
    }
  }) as LockConnection['on'];
}

/**
 * A node-redis cluster's: 'connect' once it has discovered its shards (v5 and
 * later; v4 says nothing, so a v4 cluster must be connected before it is
 * given), 'disconnect' when closed, errors of its own and of its shards'
 * connections. A shard's dropped connection rejects that shard's commands in
 * flight itself; the cluster as a whole is not `lost`.
 */
export function clusterEvents(cluster: EventSource): LockConnection['on'] {
  const names = { ready: ['connect'], lost: [], end: ['disconnect'], error: ['error', 'node-error'] } as const;
  return ((event: 'ready' | 'lost' | 'end' | 'error', listener: Listener) =>
    listen(cluster, names[event], listener)) as LockConnection['on'];
}
