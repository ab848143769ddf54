// 1. Uncontended latency: acquire + release on distinct keys, one caller.
import { P } from '../settings.mjs';
import { latency, latencyTable } from './latency.mjs';

export async function uncontended({ results, urls5, libs }) {
  const LIBS = libs.speed;
  latencyTable(
    `Uncontended acquire + release, distinct keys (${P.rounds} rounds x ${P.cycles} cycles, median of per-round percentiles)`,
    await latency(results, 'uncontended', urls5, LIBS, { cycles: P.cycles, newKeys: true }, P.rounds),
    [
      'p50, p99: a resource locked before (64 keys, each locked in the warm-up); new key: the first lock of a resource (every other cycle).',
    ],
  );
}
