// 6. Memory after many cycles, 64 concurrent callers, after GC.
import { P } from '../settings.mjs';
import { fmt, log, ratio, shuffle, table } from '../report.mjs';
import { runWorker } from '../workers.mjs';

export async function memory({ results, urls5, libs }) {
  const DLIBS = libs.degraded;
  const memory = {};
  for (const lib of shuffle(DLIBS)) {
    log(`memory: ${lib}`);
    memory[lib] = await runWorker(lib, urls5, 'memory', { cycles: P.memCycles, concurrency: P.memConcurrency, limit: 300_000 });
  }
  results.scenarios.memory = memory;
  table(
    `Memory after ${P.memCycles / 1000}k cycles (${P.memConcurrency} concurrent callers on ${P.memConcurrency * 4} keys; after GC; the process's own numbers)`,
    ['library', 'heap growth KiB', 'heap used MiB', 'RSS MiB', 'RSS growth MiB', 'RSS / raw', 'cycles/s', 'failed cycles'],
    DLIBS.map((l) => {
      const m = memory[l];
      return m.heapDelta === undefined
        ? [l, `failed: ${m.error}`, '', '', '', '', '', '']
        : [
            l,
            fmt(m.heapDelta / 1024),
            fmt(m.heapUsed / 2 ** 20, 1),
            fmt(m.rss / 2 ** 20, 1),
            fmt(m.rssDelta / 2 ** 20, 1),
            ratio(m.rss, memory.raw?.rss),
            fmt(m.done / m.seconds),
            m.failed,
          ];
    }),
    [
      `Runs until ${P.memCycles / 1000}k cycles succeeded (at most ${(3 * P.memCycles) / 1000}k tried); heap growth and RSS growth: after the run minus after the warm-up.`,
      ...DLIBS.filter((l) => memory[l].failed).map((l) => `${l}: ${memory[l].failed} failed cycles (first: ${memory[l].firstError})`),
    ],
  );
}
