import { InvalidArgumentError } from './errors/invalid-argument.error.js';
import { withoutCredentials } from './log-safe.js';
import { LockNode, type NodeSpec } from './node.js';

/**
 * The nodes of a client, one per spec, checked: a URL must look like one, and
 * two specs must not name one server (nodes must fail independently). On any
 * error the nodes made so far are closed.
 */
export function buildNodes(specs: readonly NodeSpec[]): readonly LockNode[] {
  if (!Array.isArray(specs) || specs.length === 0) {
    throw new InvalidArgumentError('nodes', 'a non-empty array of clients (ioredis, node-redis), URLs or ioredis options', specs);
  }
  const nodes: LockNode[] = [];
  const seen = new Map<string, number>();
  try {
    specs.forEach((spec, i) => {
      if (spec === null || (typeof spec !== 'string' && typeof spec !== 'object')) {
        throw new InvalidArgumentError(`nodes[${i}]`, 'a client (ioredis, node-redis), a URL or an ioredis options object', spec);
      }
      // redis-py and the Redis docs write a socket as unix:///path or redis:///path: here it is the path alone.
      if (typeof spec === 'string' && SOCKET_URL.test(spec)) {
        throw new InvalidArgumentError(
          `nodes[${i}]`,
          "a unix socket given by its path alone ('/tmp/redis.sock'), or as ioredis options ({ path, password, db })",
          spec,
        );
      }
      // An unset environment variable split on commas gives '': it must not become localhost:6379.
      if (typeof spec === 'string' && !NODE_URL.test(spec)) {
        throw new InvalidArgumentError(`nodes[${i}]`, "a redis:// or rediss:// URL (or a unix socket path starting with '/')", spec);
      }
      // ioredis reads a URL's path as the database: '/abc' became database NaN, and the node's label '.../NaN'.
      if (typeof spec === 'string' && !spec.startsWith('/') && !DATABASE_PATH.test(pathOf(spec))) {
        throw new InvalidArgumentError(`nodes[${i}]`, 'a URL whose path is a database number (redis://host:6379/2), or none', spec);
      }
      let node: LockNode;
      try {
        node = LockNode.from(spec);
      } catch (error) {
        throw new InvalidArgumentError(
          `nodes[${i}]`,
          `a usable node (${withoutCredentials(error instanceof Error ? error.message : String(error))})`,
          spec,
        );
      }
      nodes.push(node);
      const first = seen.get(node.identity);
      if (first !== undefined) {
        throw new InvalidArgumentError(
          `nodes[${i}]`,
          `a server different from nodes[${first}] (nodes must fail independently)`,
          node.label,
        );
      }
      seen.set(node.identity, i);
    });
  } catch (error) {
    for (const node of nodes) void node.close(0);
    throw error;
  }
  return nodes;
}

/** What a node given as a string must look like. */
const NODE_URL = /^(rediss?:\/\/[^\s]+|\/[^\s]*)$/i;
const DATABASE_PATH = /^\/?\d*$/;
/** A unix socket written as a URL: `unix:` (with or without `//`), or a redis URL with no host and a path. */
const SOCKET_URL = /^(unix:|rediss?:\/\/([^@/]*@)?\/(?!\d*$))/i;

/** A URL's path ('' when it does not parse: ioredis then says why). */
function pathOf(url: string): string {
  try {
    return new URL(url).pathname;
  } catch {
    return '';
  }
}
