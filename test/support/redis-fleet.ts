/**
 * N independent Redis nodes for Redlock tests.
 *
 * Backend choice (decided once per process, see resolveBackend()):
 *   - REDLOCK_TEST_CONTAINERS=0: local binaries only.
 *   - REDLOCK_TEST_CONTAINERS=1: containers if an engine is reachable,
 *     else local binaries (with a warning) if the binary is on PATH.
 *   - default: local binary (REDLOCK_TEST_SERVER, default redis-server) when
 *     it is on PATH; otherwise containers if an engine is reachable.
 * testcontainers is only imported when containers are actually considered.
 */
import { accessSync, constants as fsConstants } from 'node:fs';
import path from 'node:path';
import {
  RedisNode,
  serverBinary,
  killAllSync,
  liveNodes,
  type RedisNodeOptions,
  type RestartOptions,
  type TestRedisNode,
} from './redis-node.js';

export { RedisNode, killAllSync, liveNodes };
export type { RedisNodeOptions, RestartOptions, TestRedisNode };

export type FleetBackend = 'local' | 'container';

export interface FleetOptions extends RedisNodeOptions {
  /** Force a backend; default: decided by resolveBackend(). */
  backend?: FleetBackend;
  /** Container image when the container backend is used (default redis:7). */
  image?: string;
}

/** Whether `bin` (a name on PATH, or a path) is an executable file. */
export function binaryOnPath(bin: string): boolean {
  const candidates = bin.includes('/')
    ? [bin]
    : (process.env.PATH ?? '').split(path.delimiter).filter(Boolean).map((d) => path.join(d, bin));
  for (const c of candidates) {
    try {
      accessSync(c, fsConstants.X_OK);
      return true;
    } catch {
      /* next */
    }
  }
  return false;
}

let runtimeProbe: Promise<boolean> | undefined;

/**
 * Cheap, once-per-process check that a container engine is reachable. With no
 * engine, testcontainers fails within milliseconds ("Could not find a working
 * container runtime strategy"); a 3 s cap guards against a hanging socket.
 */
export function containerRuntimeAvailable(): Promise<boolean> {
  runtimeProbe ??= (async () => {
    let timer: NodeJS.Timeout | undefined;
    try {
      const tc = await import('testcontainers');
      return await Promise.race([
        tc.getContainerRuntimeClient().then(
          () => true,
          () => false,
        ),
        new Promise<boolean>((r) => {
          timer = setTimeout(() => r(false), 3000);
          timer.unref();
        }),
      ]);
    } catch {
      return false;
    } finally {
      clearTimeout(timer);
    }
  })();
  return runtimeProbe;
}

let backendChoice: Promise<FleetBackend> | undefined;

export function resolveBackend(): Promise<FleetBackend> {
  backendChoice ??= (async (): Promise<FleetBackend> => {
    const env = process.env.REDLOCK_TEST_CONTAINERS;
    const bin = serverBinary();
    const haveBinary = binaryOnPath(bin);
    if (env === '0' || env === 'false') return 'local';
    if (env === '1' || env === 'true') {
      if (await containerRuntimeAvailable()) return 'container';
      if (haveBinary) {
        console.warn(`REDLOCK_TEST_CONTAINERS=1 but no container engine is reachable; using local ${bin}`);
        return 'local';
      }
      throw new Error(`REDLOCK_TEST_CONTAINERS=1 but no container engine is reachable and ${bin} is not on PATH`);
    }
    if (haveBinary) return 'local';
    if (await containerRuntimeAvailable()) return 'container';
    throw new Error(
      `no Redis available for tests: ${bin} is not on PATH (set REDLOCK_TEST_SERVER) and no container engine is reachable`,
    );
  })();
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
    const { ContainerRedisNode } = await import('./redis-container-node.js');
    nodes = Array.from(
      { length: n },
      () =>
        new ContainerRedisNode({
          image,
          args: nodeOpts.args,
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
