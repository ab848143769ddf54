import type { Redis } from 'ioredis';

/** How many times `command` (e.g. `evalsha`, `set`) ran on this node since its stats were reset. */
export async function commandCalls(node: Redis, command: string): Promise<number> {
  const info = await node.info('commandstats');
  return Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(info)?.[1] ?? 0);
}

/** The keys matching `pattern` on any of `nodes` (after a round settles there: none left behind). */
export async function keysLeft(nodes: readonly Redis[], pattern: string): Promise<string[]> {
  return (await Promise.all(nodes.map((node) => node.keys(pattern)))).flat();
}

/**
 * Whether `key` exists on every one of `nodes` (`present`), or on none. Rounds are
 * decided at a quorum, so a test that looks at every node waits for this first.
 */
export async function onEveryNode(nodes: readonly Redis[], key: string, present = true): Promise<boolean> {
  const found = await Promise.all(nodes.map((node) => node.exists(key)));
  return found.every((n) => n === (present ? 1 : 0));
}
