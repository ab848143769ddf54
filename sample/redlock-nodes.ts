import type { DynamicModule } from '@nestjs/common';
import { RedlockModule } from '../lib/index.js';
import { RedlockTestingModule } from '../lib/testing/index.js';

const OPTIONS = { prefix: 'sample:', ttl: 10_000 } as const;

/**
 * `REDLOCK_NODES=memory`: three in-memory nodes inside this process (the
 * testing module's, same lock semantics as Redis, shared with no other process).
 * `npm run sample` sets it when no redis-server is on PATH.
 */
export const IN_MEMORY = process.env.REDLOCK_NODES?.trim() === 'memory';

/** `REDLOCK_NODES=redis://127.0.0.1:7001,redis://127.0.0.1:7002,...` (the launchers set it). */
function nodesFromEnv(): string[] {
  const nodes = (process.env.REDLOCK_NODES ?? '')
    .split(',')
    .map((url) => url.trim())
    .filter(Boolean);
  if (nodes.length === 0) {
    throw new Error('REDLOCK_NODES is not set: give comma-separated redis URLs or `memory`, or start the sample with `npm run sample`');
  }
  return nodes;
}

/** The sample's RedlockModule: the same module, options and behaviour on Redis nodes and on in-memory ones. */
export function redlockModule(): DynamicModule {
  if (IN_MEMORY) return RedlockTestingModule.forRoot({ ...OPTIONS, nodes: 3 });
  return RedlockModule.forRootAsync({ useFactory: () => ({ ...OPTIONS, nodes: nodesFromEnv() }) });
}
