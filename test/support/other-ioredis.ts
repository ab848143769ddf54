import { cpSync, existsSync } from 'node:fs';
import path from 'node:path';
import type { Cluster as ClusterClass, ClusterNode, ClusterOptions, Redis as RedisClass, RedisOptions } from 'ioredis';

/**
 * For a test's own ioredis clients, where their closing is not what the test is
 * about: ioredis's default `disconnectTimeout` (2 s) starts a timer at
 * `disconnect()` that only the socket's 'close' clears, and a client whose node
 * is gone, or that had already quit, emitted that before: the timer then keeps
 * Jest's worker alive past its tests ("failed to exit gracefully").
 */
export const QUICK_CLOSE = { disconnectTimeout: 50 } as RedisOptions;

/**
 * A second copy of the ioredis package, as an application that depends on
 * ioredis itself has beside the library's: the same code at another path, so
 * its classes are not the library's (`instanceof` fails). Copied under
 * node_modules so that its own dependencies resolve to the installed ones.
 */
export async function otherIoredis(): Promise<new (url: string, options?: RedisOptions) => RedisClass> {
  return (await otherCopy()).Redis;
}

/** The Cluster class of that second copy. */
export async function otherIoredisCluster(): Promise<new (seeds: ClusterNode[], options?: ClusterOptions) => ClusterClass> {
  return (await otherCopy()).Cluster;
}

async function otherCopy() {
  const root = path.resolve('node_modules');
  const copy = path.join(root, '.cache', 'ioredis-copy', 'node_modules', 'ioredis');
  if (!existsSync(path.join(copy, 'package.json'))) cpSync(path.join(root, 'ioredis'), copy, { recursive: true });
  const module = (await import(path.join(copy, 'built', 'index.js'))) as {
    default: {
      Redis: new (url: string, options?: RedisOptions) => RedisClass;
      Cluster: new (seeds: ClusterNode[], options?: ClusterOptions) => ClusterClass;
    };
  };
  return module.default;
}
