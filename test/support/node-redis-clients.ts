/**
 * The node-redis versions the suite runs on, installed side by side under npm
 * aliases (redis4, redis5, redis6): each is its own copy of @redis/client, as
 * an application's own dependency is beside the library's.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import * as redis4 from 'redis4';
import * as redis5 from 'redis5';
import * as redis6 from 'redis6';

/** What a test does with a node-redis client, whatever its version. */
export interface NodeRedisClient {
  readonly isOpen: boolean;
  readonly isReady: boolean;
  sendCommand(args: string[]): Promise<unknown>;
  duplicate(): NodeRedisClient;
  connect(): Promise<unknown>;
  on(event: string, listener: (...args: any[]) => void): unknown;
  close?(): Promise<unknown>;
  quit?(): Promise<unknown>;
}

/** A node-redis cluster, whatever its version. */
export interface NodeRedisCluster {
  readonly isOpen: boolean;
  readonly masters: readonly unknown[];
  sendCommand(firstKey: string | undefined, isReadonly: boolean, args: string[]): Promise<unknown>;
  duplicate(): NodeRedisCluster;
  connect(): Promise<unknown>;
  on(event: string, listener: (...args: any[]) => void): unknown;
  close?(): Promise<unknown>;
  quit?(): Promise<unknown>;
  destroy?(): void;
  disconnect?(): Promise<unknown>;
}

export interface NodeRedisVersion {
  /** `node-redis v5 (RESP3)`. */
  readonly name: string;
  /** The @redis/client version installed. */
  readonly version: string;
  /** A client of `url` with `options` (and the version's protocol); not connected. */
  client(url: string, options?: Record<string, unknown>): NodeRedisClient;
  /** A cluster of `seeds`; not connected. */
  cluster(seeds: readonly { host: string; port: number }[]): NodeRedisCluster;
}

const version = (name: string): string => {
  const pkg = (name === 'redis4' ? '@redis/client' : `${name}/node_modules/@redis/client`) + '/package.json';
  return (JSON.parse(readFileSync(path.resolve('node_modules', pkg), 'utf8')) as { version: string }).version;
};

function versionOf(
  name: string,
  module: { createClient: (options: never) => unknown; createCluster: (options: never) => unknown },
  pkg: string,
  protocol: Record<string, unknown> = {},
): NodeRedisVersion {
  return {
    name,
    version: version(pkg),
    client: (url, options = {}) => module.createClient({ url, ...protocol, ...options } as never) as NodeRedisClient,
    cluster: (seeds) =>
      module.createCluster({
        rootNodes: seeds.map(({ host, port }) => ({ socket: { host, port } })),
        defaults: protocol,
      } as never) as NodeRedisCluster,
  };
}

/** v4 (RESP2 only), v5 in RESP2 (its default) and RESP3, v6 (RESP3 by default). */
export const NODE_REDIS_VERSIONS: readonly NodeRedisVersion[] = [
  versionOf('node-redis v4', redis4, 'redis4'),
  versionOf('node-redis v5', redis5, 'redis5'),
  versionOf('node-redis v5 (RESP3)', redis5, 'redis5', { RESP: 3 }),
  versionOf('node-redis v6 (RESP3)', redis6, 'redis6'),
];

/** Connects `client` with an error listener (node-redis throws an 'error' event nobody listens to). */
export async function connected<C extends { connect(): Promise<unknown>; on(event: string, listener: (...args: any[]) => void): unknown }>(
  client: C,
): Promise<C> {
  client.on('error', () => undefined);
  await client.connect();
  return client;
}

/** Closes a client or cluster of any version (v4: quit; v5 and later: close); nothing if it is closed already. */
export async function closeClient(client: { isOpen: boolean; close?(): Promise<unknown>; quit?(): Promise<unknown> }): Promise<void> {
  if (!client.isOpen) return;
  await (client.close ? client.close() : client.quit!()).catch(() => undefined);
}

/**
 * Closes a client or cluster of any version at once (v4: disconnect; v5 and later: destroy),
 * where `closeClient` would wait for servers that are gone (QUIT, or what is queued).
 */
export async function destroyClient(client: { destroy?(): void; disconnect?(): Promise<unknown> }): Promise<void> {
  if (client.destroy) client.destroy();
  else await client.disconnect!();
}
