// 6. Memory after many cycles, 64 concurrent callers, after GC.
import { P } from '../settings.mjs';
import { fmt, log, ratio, shuffle, table } from '../report.mjs';
import { runWorker } from '../workers.mjs';
import { nodeGrowth, nodeMemory } from '../node-memory.mjs';

export async function memory({ results, urls5, libs }) {
  const DLIBS = libs.degraded;
  const memory = {};
  for (const lib of shuffle(DLIBS)) {
    log(`memory: ${lib}`);
    // The nodes' growth over the whole worker (warm-up, run, close): what the library leaves on them.
    const before = await nodeMemory(urls5);
    memory[lib] = await runWorker(lib, urls5, 'memory', { cycles: P.memCycles, concurrency: P.memConcurrency, limit: 300_000 });
    memory[lib].nodes = nodeGrowth(before, await nodeMemory(urls5));
  }
  results.scenarios.memory = memory;
  table(
    `Memory after ${P.memCycles / 1000}k cycles (${P.memConcurrency} concurrent callers on ${P.memConcurrency * 4} keys; after GC; the process's own numbers)`,
    [
      'library',
      'heap growth KiB',
      'heap used MiB',
      'RSS MiB',
      'RSS growth MiB',
      'RSS / raw',
      'node keys left',
      'node memory growth KiB',
      'cycles/s',
      'failed cycles',
    ],
    DLIBS.map((l) => {
      const m = memory[l];
      return m.heapDelta === undefined
        ? [l, `failed: ${m.error}`, '', '', '', '', '', '', '', '']
        : [
            l,
            fmt(m.heapDelta / 1024),
            fmt(m.heapUsed / 2 ** 20, 1),
            fmt(m.rss / 2 ** 20, 1),
            fmt(m.rssDelta / 2 ** 20, 1),
            ratio(m.rss, memory.raw?.rss),
            fmt(m.nodes.keys),
            fmt(m.nodes.bytes / 1024, 1),
            fmt(m.done / m.seconds),
            m.failed,
          ];
    }),
    [
      `Runs until ${P.memCycles / 1000}k cycles succeeded (at most ${(3 * P.memCycles) / 1000}k tried); heap growth and RSS growth: after the run minus after the warm-up.`,
      'node keys left, node memory growth: per node (mean of the 5), DBSIZE and INFO used_memory after the worker closed minus before it started;',
      `nest-redlock's fencing counters (one per resource locked, ${P.memConcurrency * 4} resources here) stay for fencingRetention.`,
      ...DLIBS.filter((l) => memory[l].failed).map((l) => `${l}: ${memory[l].failed} failed cycles (first: ${memory[l].firstError})`),
    ],
  );
}
