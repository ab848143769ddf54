/**
 * One real `redis-server` process for integration / fault tests: the shared
 * spawner (scripts/redis-spawner.mjs, also used by the sample launchers, the
 * benchmarks and the consumer apps) plus the interface the container node
 * (./redis-container-node.ts) shares with it.
 *
 * Free port on 127.0.0.1, binary from env REDLOCK_TEST_SERVER, signals only to
 * the PID we were handed, and no redis-server outlives this process (see the
 * wrapper in the spawner). The harness talks raw RESP over node:net (./resp.ts).
 */
import type { RedisNode } from '../../scripts/redis-spawner.mjs';

export {
  DEFAULT_SERVER_BINARY,
  RedisNode,
  findFreePort,
  killAllSync,
  liveNodes,
  pidAlive,
  serverBinary,
  type RedisNodeOptions,
  type RestartOptions,
} from '../../scripts/redis-spawner.mjs';

/** What both the local-process node and the (optional) container node offer (pid: undefined in a container). */
export type TestRedisNode = { readonly host: string } & Pick<
  RedisNode,
  'port' | 'url' | 'extraPorts' | 'pid' | 'running' | 'paused' | 'start' | 'stop' | 'kill' | 'pause' | 'resume' | 'restart'
>;
