// 7. Node count: the uncontended cycle on 1, 3, 5 and 7 nodes, this library against the raw round.
import { adapters } from '../adapters/index.mjs';
import { P, isPeer } from '../settings.mjs';
import { fmt, ratio, table } from '../report.mjs';
import { latency } from './latency.mjs';

export async function nodeCount({ results, nodes, libs }) {
  const LIBS = libs.speed;
  // Its own connections only: the client setups are compared in the other speed scenarios.
  const NLIBS = LIBS.filter((l) => !isPeer(l) && !adapters[l].clients);
  const scale = {};
  for (const n of [1, 3, 5, 7]) {
    scale[n] = await latency(
      results,
      `n${n}`,
      nodes.slice(0, n).map((x) => x.url),
      NLIBS,
      { cycles: P.nCycles },
      P.nRounds,
    );
    delete results.scenarios[`n${n}`];
  }
  results.scenarios.nodes = scale;
  table(
    `Uncontended cycle by node count, p50 µs (${P.nRounds} round(s) x ${P.nCycles} cycles)`,
    ['N', ...NLIBS.flatMap((l) => (l === 'raw' ? [l] : [l, `${l} / raw`]))],
    Object.entries(scale).map(([n, s]) => [
      n,
      ...NLIBS.flatMap((l) => (l === 'raw' ? [fmt(s.raw.p50)] : [fmt(s[l].p50), ratio(s[l].p50, s.raw.p50)])),
    ]),
  );
}
