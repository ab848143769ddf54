// 2. 64-way throughput: 64 concurrent callers in one process on distinct keys, with client and server CPU per cycle.
import { P } from '../settings.mjs';
import { fmt, log, median, ratio, shuffle, table } from '../report.mjs';
import { runWorker } from '../workers.mjs';

export async function throughput({ results, urls5, libs }) {
  const LIBS = libs.speed;
  const PEERS = libs.peers;
  const tp = Object.fromEntries(LIBS.map((l) => [l, []]));
  const tpErrors = {};
  const tpCpu = Object.fromEntries(LIBS.map((l) => [l, []]));
  const tpServer = Object.fromEntries(LIBS.map((l) => [l, []]));
  for (let r = 0; r < P.tpRounds; r++) {
    log(`throughput: round ${r + 1}/${P.tpRounds}`);
    for (const lib of shuffle(LIBS)) {
      let before;
      let serverCpu;
      const res = await runWorker(
        lib,
        urls5,
        'throughput',
        { concurrency: 64, ms: P.tpMs },
        {
          ready: async () => void (before = await redisCpu(urls5)),
          result: async () => void (serverCpu = (await redisCpu(urls5)) - before),
        },
      );
      if (res.perSecond === undefined || res.failed) tpErrors[lib] = res.error ?? `${res.failed} failed cycles (${res.firstError})`;
      tp[lib].push(res.perSecond);
      tpCpu[lib].push(res.cpuPerCycle);
      tpServer[lib].push(res.done ? (serverCpu * 1e6) / res.done : undefined);
    }
  }
  const tpMed = Object.fromEntries(LIBS.map((l) => [l, median(tp[l])]));
  const bestPeer = Math.max(0, ...PEERS.map((p) => tpMed[p] ?? 0));
  const cpuMed = Object.fromEntries(LIBS.map((l) => [l, median(tpCpu[l])]));
  const serverMed = Object.fromEntries(LIBS.map((l) => [l, median(tpServer[l])]));
  results.scenarios.throughput64 = { median: tpMed, rounds: tp, clientCpuPerCycle: cpuMed, redisCpuPerCycle: serverMed, errors: tpErrors };
  table(
    `64 concurrent callers in one process, distinct keys (${P.tpRounds} rounds x ${P.tpMs / 1000} s, each after ${P.tpMs / 1000} s of warm-up)`,
    ['library', 'cycles/s', 'vs best peer', 'vs raw', 'client CPU µs/cycle', 'redis CPU µs/cycle'],
    LIBS.map((l) => [l, fmt(tpMed[l]), ratio(tpMed[l], bestPeer), ratio(tpMed[l], tpMed.raw), fmt(cpuMed[l]), fmt(serverMed[l])]),
    [
      'client CPU: the worker process (user + system) per cycle; redis CPU: all 5 servers together per cycle (INFO cpu). Medians over rounds.',
      ...Object.entries(tpErrors).map(([l, e]) => `${l}: ${e}`),
    ],
  );
}

/** CPU seconds (user + system) the servers at `urls` used so far, all together, from INFO cpu. */
async function redisCpu(urls) {
  const { Redis } = await import('ioredis');
  let total = 0;
  for (const url of urls) {
    const client = new Redis(url, { maxRetriesPerRequest: 1, lazyConnect: true });
    client.on('error', () => undefined);
    try {
      await client.connect();
      const info = await client.info('cpu');
      for (const m of info.matchAll(/^used_cpu_(?:sys|user):([\d.]+)/gm)) total += Number(m[1]);
    } finally {
      client.disconnect();
    }
  }
  return total;
}
