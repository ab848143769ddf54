/**
 * N independent Redis nodes for Redlock tests.
 *
 * Backend: decided once per process by findServers() (./find-servers.mjs): the
 * local binary (REDLOCK_TEST_SERVER, default redis-server) when it is on PATH,
 * else containers when an engine answers; REDLOCK_TEST_CONTAINERS=0/1 forces
 * one. The jest global setup makes the same decision before any test runs and
 * stops at once, with one line, when there is nothing to run on.
 * testcontainers is only imported when containers are actually considered.
 */
import { RedisNode, killAllSync, liveNodes, type RedisNodeOptions, type RestartOptions, type TestRedisNode } from './redis-node.js';
import { containerRuntimeAvailable, findServers } from './find-servers.mjs';

export { RedisNode, killAllSync, liveNodes, containerRuntimeAvailable };
export type { RedisNodeOptions, RestartOptions, TestRedisNode };

export type FleetBackend = 'local' | 'container';

export interface FleetOptions extends RedisNodeOptions {
  /** Force a backend; default: decided by resolveBackend(). */
  backend?: FleetBackend;
  /** Container image when the container backend is used (default redis:7). */
  image?: string;
}

let backendChoice: Promise<FleetBackend> | undefined;

export function resolveBackend(): Promise<FleetBackend> {
  backendChoice ??= findServers().then(({ backend, note }) => {
    if (note) console.warn(note);
    return backend;
  });
  return backendChoice;
}

export class RedisFleet {
  constructor(readonly nodes: TestRedisNode[]) {}

  get size(): number {
    return this.nodes.length;
  }
  get urls(): string[] {
    return this.nodes.map((n) => n.url);
  }
  get ports(): number[] {
    return this.nodes.map((n) => n.port);
  }
  node(i: number): TestRedisNode {
    const n = this.nodes[i];
    if (!n) throw new Error(`fleet has no node ${i} (size ${this.nodes.length})`);
    return n;
  }
  kill(i: number): Promise<void> {
    return this.node(i).kill();
  }
  pause(i: number): Promise<void> {
    return this.node(i).pause();
  }
  resume(i: number): Promise<void> {
    return this.node(i).resume();
  }
  restart(i: number, opts?: RestartOptions): Promise<void> {
    return this.node(i).restart(opts);
  }
  /** Stop every node (resuming paused ones first). Never throws. */
  async stop(): Promise<void> {
    const results = await Promise.allSettled(this.nodes.map((n) => n.stop()));
    for (const r of results) {
      if (r.status === 'rejected') console.warn('RedisFleet.stop: a node failed to stop:', r.reason);
    }
  }
}

/** Start n nodes in parallel. If any fails, the started ones are stopped and the error rethrown. */
export async function startFleet(n: number, opts: FleetOptions = {}): Promise<RedisFleet> {
  const { backend: forced, image, ...nodeOpts } = opts;
  const backend = forced ?? (await resolveBackend());
  let nodes: TestRedisNode[];
  if (backend === 'container') {
    const { args } = nodeOpts;
    if (typeof args === 'function' || nodeOpts.extraPorts) throw new Error('extraPorts need the local backend (a container maps one port)');
    const { ContainerRedisNode } = await import('./redis-container-node.js');
    nodes = Array.from(
      { length: n },
      () =>
        new ContainerRedisNode({
          image,
          args,
          persistence: nodeOpts.persistence,
          startTimeoutMs: nodeOpts.startTimeoutMs,
        }),
    );
  } else {
    if (nodeOpts.port !== undefined && n > 1) throw new Error('FleetOptions.port only makes sense for n = 1');
    nodes = Array.from({ length: n }, () => new RedisNode(nodeOpts));
  }
  const results = await Promise.allSettled(nodes.map((node) => node.start()));
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) {
    await Promise.allSettled(nodes.map((node) => node.stop()));
    throw failed.reason;
  }
  return new RedisFleet(nodes);
}
