// Latency over rounds (uncontended, degraded, node count): runs and table.
import { fmt, log, median, ratio, shuffle, table } from '../report.mjs';
import { runWorker } from '../workers.mjs';

/** Uncontended cycles, interleaved over rounds: per library, the median over rounds of each round's p50 and p99 (µs). */
export async function latency(results, name, urls, libs, params, rounds, hooks = () => ({})) {
  const samples = Object.fromEntries(libs.map((l) => [l, []]));
  const gaveUp = new Set();
  for (let r = 0; r < rounds; r++) {
    log(`${name}: round ${r + 1}/${rounds}`);
    for (const lib of shuffle(libs)) {
      if (gaveUp.has(lib)) continue; // timed out in an earlier round: it would again
      const s = await runWorker(lib, urls, 'latency', params, hooks(lib));
      samples[lib].push(s);
      if (s.timeout) gaveUp.add(lib);
    }
  }
  const out = {};
  for (const lib of libs) {
    const ok = samples[lib].filter((s) => s.p50 !== undefined);
    const failed = samples[lib].reduce((n, s) => n + (s.failed ?? 0), 0);
    const timeouts = samples[lib].reduce((n, s) => n + (s.timeouts ?? 0), 0);
    const bad = samples[lib].find((s) => s.p50 === undefined);
    out[lib] =
      ok.length && !bad
        ? {
            p50: median(ok.map((s) => s.p50)),
            // Per round, this round's degraded p50 over its own healthy p50 (see `baseline` in worker.mjs).
            vsHealthy: ok.every((s) => s.baselineP50) ? median(ok.map((s) => s.p50 / s.baselineP50)) : undefined,
            p99: median(ok.map((s) => s.p99)),
            newP50: median(ok.map((s) => s.newP50)),
            failed,
            timeouts,
            firstError: ok.find((s) => s.firstError)?.firstError,
          }
        : { failed: bad?.timeout ? 'timeout' : 'failed', error: bad?.error, rounds: samples[lib] };
    out[lib].rounds = samples[lib];
  }
  results.scenarios[name] = out;
  return out;
}

export function latencyTable(title, out, notes = []) {
  const raw = out.raw;
  const extra = [];
  const newKeys = raw?.newP50 !== undefined;
  const vsHealthy = Object.values(out).some((r) => r.vsHealthy !== undefined);
  const rows = Object.entries(out).map(([lib, r]) => {
    if (typeof r.failed === 'string') {
      extra.push(
        `${lib}: ${r.failed === 'timeout' ? '3 operations hit the deadline' : 'failed'}${r.error && r.error !== 'deadline' ? ` (${r.error})` : ''}`,
      );
      return [lib, r.failed, '', '', '', ...(newKeys ? ['', ''] : []), ...(vsHealthy ? [''] : [])];
    }
    if (r.failed || r.timeouts)
      extra.push(
        `${lib}: ${r.failed} failed and ${r.timeouts} timed-out cycles over all rounds${r.firstError ? ` (first: ${r.firstError})` : ''}`,
      );
    return [
      lib,
      fmt(r.p50),
      fmt(r.p99),
      ratio(r.p50, raw?.p50),
      ratio(r.p99, raw?.p99),
      ...(newKeys ? [fmt(r.newP50), ratio(r.newP50, raw.newP50)] : []),
      ...(vsHealthy ? [r.vsHealthy ? `${r.vsHealthy.toFixed(2)}x` : '-'] : []),
    ];
  });
  const head = [
    'library',
    'p50 µs',
    'p99 µs',
    'p50 / raw',
    'p99 / raw',
    ...(newKeys ? ['new key p50 µs', 'new key / raw'] : []),
    ...(vsHealthy ? ['p50 / healthy'] : []),
  ];
  table(title, head, rows, [...notes, ...extra]);
}
