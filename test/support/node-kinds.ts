/**
 * The ways a lock node can be given, one per client library the adapters
 * support: the suites shared by every client (waiting, fencing, node failures)
 * take one of these and run unchanged over it.
 */
import { Valkey } from 'iovalkey';
import type { NodeSpec } from '../../lib/index.js';
import { glideClient } from './glide.js';
import { closeClient, connected, NODE_REDIS_VERSIONS, type NodeRedisVersion } from './node-redis-clients.js';
import { otherIoredis } from './other-ioredis.js';
import type { RedisFleet } from './redis-fleet.js';
import { until } from './until.js';

/** Lock nodes of a fleet's servers, and how to close what was opened for them. */
export interface OpenedNodes {
  readonly nodes: NodeSpec[];
  close(): Promise<void>;
}

export interface NodeKind {
  /** `ioredis (URLs)`, `node-redis v5 (RESP3)`, ... */
  readonly name: string;
  /**
   * Nodes of `fleet`'s servers as the application gives them, connected. The
   * clients reconnect on their own after a node restarts, within ~200 ms.
   */
  open(fleet: RedisFleet): Promise<OpenedNodes>;
  /**
   * The client does not report a dropped connection: a server killed while
   * nothing is in flight looks hung, not down, until a command to it fails
   * (Valkey GLIDE: its core reconnects silently, and a command waits for the
   * reconnect up to its `requestTimeout`).
   */
  readonly dropsUnseen?: true;
}

/** URLs: the lock client opens its own ioredis connections (the default). */
export const IOREDIS_URLS: NodeKind = {
  name: 'ioredis (URLs)',
  open: async (fleet) => ({ nodes: fleet.urls, close: async () => undefined }),
};

/** The application's own ioredis clients, of another copy of the package (its classes are not the library's). */
export const IOREDIS_OTHER_COPY: NodeKind = {
  name: 'ioredis clients of another ioredis copy',
  async open(fleet) {
    const OtherRedis = await otherIoredis();
    // Set up as the library sets up its own connections.
    const clients = fleet.urls.map((url) => new OtherRedis(url, { autoResendUnfulfilledCommands: false, enableOfflineQueue: false }));
    clients.forEach((c) => c.on('error', () => undefined));
    await until(() => clients.every((c) => c.status === 'ready'), 'the clients connected');
    return { nodes: clients, close: async () => clients.forEach((c) => c.disconnect()) };
  },
};

export const IOVALKEY: NodeKind = {
  name: 'iovalkey clients',
  async open(fleet) {
    const clients = fleet.urls.map((url) => new Valkey(url, { autoResendUnfulfilledCommands: false, enableOfflineQueue: false }));
    clients.forEach((c) => c.on('error', () => undefined));
    await until(() => clients.every((c) => c.status === 'ready'), 'the clients connected');
    return { nodes: clients, close: async () => clients.forEach((c) => c.disconnect()) };
  },
};

/** node-redis clients of one version, with its default offline queue; they reconnect at least every 200 ms. */
export const nodeRedisKind = (version: NodeRedisVersion): NodeKind => ({
  name: `${version.name} clients`,
  async open(fleet) {
    const reconnect = () => ({ socket: { reconnectStrategy: (n: number) => Math.min(n * 50, 200) } });
    const clients = await Promise.all(fleet.urls.map((url) => connected(version.client(url, reconnect()))));
    return { nodes: clients as NodeSpec[], close: async () => void (await Promise.all(clients.map(closeClient))) };
  },
});

export const NODE_REDIS_KINDS: readonly NodeKind[] = NODE_REDIS_VERSIONS.map(nodeRedisKind);

export const GLIDE: NodeKind = {
  name: 'Valkey GLIDE GlideClient',
  dropsUnseen: true,
  async open(fleet) {
    const clients = await Promise.all(fleet.ports.map((port) => glideClient(port)));
    return { nodes: clients, close: async () => clients.forEach((c) => c.close()) };
  },
};
