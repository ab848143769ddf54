import type { RedisOptions } from 'ioredis';
import type { LockConnection } from '../connection.js';
import { IoredisConnection, isIoredis, openIoredis, type IoredisClientLike, type RedisClient } from './ioredis.connection.js';
import { NodeRedisConnection, isNodeRedis, type NodeRedisClientLike, type NodeRedisClusterLike } from './node-redis.connection.js';

/**
 * One Redlock node, as given by the user: a client of a library this package
 * knows (left open by `close()`), a connection URL or an ioredis options object
 * (connected and closed by the lock client).
 */
export type NodeSpec = RedisClient | IoredisClientLike | NodeRedisClientLike | NodeRedisClusterLike | string | RedisOptions;

/**
 * The connection for one node spec, and whether the lock client opened it (and
 * so closes it). A client is recognised by its shape, never by `instanceof`: an
 * application's own copy of a client package must work as the library's does.
 * A plain object is an options object; any other object must be a known client.
 */
export function connectionFor(spec: NodeSpec): { connection: LockConnection; owned: boolean } {
  if (typeof spec === 'string' || isPlainObject(spec)) {
    return { connection: new IoredisConnection(openIoredis(spec as string | RedisOptions)), owned: true };
  }
  if (isIoredis(spec)) return { connection: new IoredisConnection(spec), owned: false };
  if (isNodeRedis(spec)) return { connection: new NodeRedisConnection(spec), owned: false };
  throw new TypeError(`${nameOf(spec)} is not a client this library knows (an ioredis Redis or Cluster, a node-redis client or cluster)`);
}

function isPlainObject(value: object): boolean {
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

/** A class name at most: the object itself may hold credentials. */
function nameOf(value: object): string {
  const name = (value as { constructor?: { name?: unknown } }).constructor?.name;
  return typeof name === 'string' && name ? `a ${name}` : 'the object';
}
