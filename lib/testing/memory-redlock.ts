import { type NodeSpec, type RedlockOptions, Redlock } from '../core/index.js';
import { createMemoryNodes, MemoryRedisNode } from './memory-node.js';

/** Nodes for a test client: a count of new in-memory nodes, or nodes made by the test (to fail them, read their keys). */
export type MemoryNodesOption = number | readonly MemoryRedisNode[];

/** `RedlockOptions` with in-memory nodes instead of Redis ones. */
export interface MemoryRedlockOptions extends Omit<RedlockOptions, 'nodes'> {
  /** Default 3 new nodes (a quorum of 2). */
  readonly nodes?: MemoryNodesOption;
}

/** The in-memory nodes an option names, made if it is a count. */
export function resolveMemoryNodes(nodes: MemoryNodesOption = 3): MemoryRedisNode[] {
  if (typeof nodes === 'number') return createMemoryNodes(nodes);
  if (!Array.isArray(nodes) || nodes.some((n) => !(n instanceof MemoryRedisNode))) {
    throw new TypeError('Expected `nodes` to be a number of nodes or an array of MemoryRedisNode');
  }
  return [...nodes];
}

/**
 * A real `Redlock` client over in-memory nodes: the same quorum, retries,
 * events, validity and fencing as in production, without Redis. Close it
 * after the test like any client.
 *
 * @example
 * const redlock = createMemoryRedlock();
 * await redlock.using('report', 5000, async (lock) => buildReport(lock.fencingToken));
 * await redlock.close();
 */
export function createMemoryRedlock(options: MemoryRedlockOptions = {}): Redlock {
  const { nodes, ...rest } = options;
  return new Redlock({ ...rest, nodes: asNodeSpecs(resolveMemoryNodes(nodes)) });
}

/**
 * In-memory nodes as `Redlock` node specs, for `new Redlock({ nodes })` or
 * `RedlockModule.forRoot({ nodes })`. A memory node has an ioredis client's
 * shape (`IoredisClientLike`), so the nodes themselves are accepted too; this
 * stays for the code written when they were not.
 */
export function asNodeSpecs(nodes: readonly MemoryRedisNode[]): NodeSpec[] {
  return [...nodes];
}
