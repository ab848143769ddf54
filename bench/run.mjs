// npm run bench [-- --quick]
//
// This library against node-redlock (v5 and v4), @sesamecare-oss/redlock and
// redis-semaphore's RedlockMutex, and against a raw round written directly with
// ioredis, on the same local redis-server nodes started here. Every measurement
// runs in its own process (worker.mjs, one adapter per library in
// adapters/index.mjs); libraries are interleaved in a fresh random order each
// round, and the tables show medians over rounds. Results also go to
// bench/results/latest.json (bench/results/partial.json for a partial run).
//
// --quick: about a minute (fewer rounds, cycles and shorter runs).
// --only=uncontended,memory,...: run only those scenarios.
// BENCH_LIBS=nest-redlock,raw,...: run only those libraries.
import { execFileSync, fork } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { adapters } from './adapters/index.mjs';
import { serverBinary, startNode } from '../scripts/redis-spawner.mjs';

const QUICK = process.argv.includes('--quick');
const P = QUICK
  ? {
      rounds: 2, cycles: 150, // uncontended
      tpRounds: 1, tpMs: 1000, // 64-way throughput
      cRounds: 1, cMs: 1000, cGrace: 1000, // contention
      dRounds: 1, dCycles: 100, dDeadline: 1000, // degraded
      memCycles: 5000, memConcurrency: 64,
      nRounds: 1, nCycles: 200,
    }
  : {
      rounds: 5, cycles: 1000,
      tpRounds: 3, tpMs: 1500,
      cRounds: 2, cMs: 3000, cGrace: 12_000,
      dRounds: 3, dCycles: 400, dDeadline: 2000,
      memCycles: 200_000, memConcurrency: 64,
      nRounds: 3, nCycles: 400,
    };

const started = performance.now();
const only = process.env.BENCH_LIBS?.split(',').map((s) => s.trim());
// --only=memory,contention: only those scenarios (uncontended, throughput, contention, oneDown, twoPaused, memory, nodes).
const scenarios = process.argv.find((a) => a.startsWith('--only='))?.slice(7).split(',');
const want = (name) => !scenarios || scenarios.includes(name);
let LIBS = Object.keys(adapters).filter((l) => !only || l === 'raw' || only.includes(l));
const isPeer = (l) => !l.startsWith('nest-redlock') && l !== 'raw';
/** The libraries themselves, plus the variants (of nest-redlock's settings) of one kind of scenario. */
const MAIN = (libs, variant) => libs.filter((l) => !adapters[l].variant || adapters[l].variant === variant);

const bench = new URL('./', import.meta.url);
const results = {
  date: new Date().toISOString(),
  quick: QUICK,
  params: P,
  machine: machine(),
  versions: versions(),
  waiting: Object.fromEntries(LIBS.map((l) => [l, adapters[l].waits])),
  skipped: {},
  scenarios: {},
};

// --- nodes ---------------------------------------------------------------

const nodes = [];

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

// --- workers -------------------------------------------------------------

const children = new Set();
let copy; // a copy of dist/esm, for this run
let snapshot; // file URL of the copy's core/index.js, which the workers import

/**
 * Runs one worker to its end. `hooks.ready()` runs when the worker is warm, and
 * returns what goes in its go message; `hooks.result(child)` runs as soon as its
 * result arrives (or, with no child, when it exited without one); `hooks.message(m,
 * child)` gets its other messages. Never rejects: a failure resolves to `{ error }`.
 */
function runWorker(adapter, urls, scenario, params, hooks = {}) {
  return new Promise((resolve) => {
    const child = fork(new URL('./worker.mjs', bench).pathname, [JSON.stringify({ adapter, urls, scenario, params })], {
      execArgv: ['--expose-gc'],
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      env: { ...process.env, BENCH_NEST_REDLOCK: snapshot },
    });
    children.add(child);
    let result;
    let err = '';
    let wasReady = false;
    let afterResult;
    child.stderr.on('data', (d) => (err += d));
    const limit = setTimeout(() => {
      err ||= `killed after ${params.limit ?? 120_000} ms`;
      child.kill('SIGKILL');
    }, params.limit ?? 120_000);
    child.on('message', async (m) => {
      if (m.type === 'ready') {
        wasReady = true;
        const go = (await hooks.ready?.()) ?? {};
        if (child.connected) child.send({ type: 'go', ...go });
      } else if (m.type === 'result') {
        result = m.result;
        afterResult = hooks.result?.(child);
      } else {
        hooks.message?.(m, child);
      }
    });
    child.on('exit', async () => {
      clearTimeout(limit);
      children.delete(child);
      if (!wasReady) await hooks.failed?.();
      await (result ? afterResult : hooks.result?.());
      const error = err.split('\n').find((l) => /Error|error/.test(l)) ?? err.split('\n')[0];
      resolve(result ?? { error: error?.trim().slice(0, 200) || 'no result' });
    });
  });
}

// --- statistics and output -----------------------------------------------

const median = (xs) => {
  const s = xs.filter((x) => typeof x === 'number' && !Number.isNaN(x)).sort((a, b) => a - b);
  if (!s.length) return undefined;
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const shuffle = (xs) => xs.map((x) => [Math.random(), x]).sort((a, b) => a[0] - b[0]).map((x) => x[1]);
const fmt = (x, digits = 0) => (x === undefined || x === null || Number.isNaN(x) ? '-' : x.toFixed(digits));
const ratio = (x, base) => (x === undefined || !base ? '-' : `${(x / base).toFixed(2)}x`);

function table(title, head, rows, notes = []) {
  const all = [head, ...rows].map((r) => r.map((c) => String(c ?? '')));
  const widths = head.map((_, i) => Math.max(...all.map((r) => r[i].length)));
  const line = (r) => `| ${r.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  console.log(`\n### ${title}\n\n${line(all[0])}\n${line(widths.map((w) => '-'.repeat(w)))}\n${all.slice(1).map(line).join('\n')}`);
  if (notes.length) console.log(`\n${notes.join('\n')}`);
}
const log = (s) => process.stderr.write(`[bench ${((performance.now() - started) / 1000).toFixed(0).padStart(3)} s] ${s}\n`);

// --- scenarios -------------------------------------------------------------

/** Uncontended cycles, interleaved over rounds: per library, the median over rounds of each round's p50 and p99 (µs). */
async function latency(name, urls, libs, params, rounds, hooks = () => ({})) {
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

function latencyTable(title, out, notes = []) {
  const raw = out.raw;
  const extra = [];
  const newKeys = raw?.newP50 !== undefined;
  const vsHealthy = Object.values(out).some((r) => r.vsHealthy !== undefined);
  const rows = Object.entries(out).map(([lib, r]) => {
    if (typeof r.failed === 'string') {
      extra.push(`${lib}: ${r.failed === 'timeout' ? '3 operations hit the deadline' : 'failed'}${r.error && r.error !== 'deadline' ? ` (${r.error})` : ''}`);
      return [lib, r.failed, '', '', '', ...(newKeys ? ['', ''] : []), ...(vsHealthy ? [''] : [])];
    }
    if (r.failed || r.timeouts) extra.push(`${lib}: ${r.failed} failed and ${r.timeouts} timed-out cycles over all rounds${r.firstError ? ` (first: ${r.firstError})` : ''}`);
    return [lib, fmt(r.p50), fmt(r.p99), ratio(r.p50, raw?.p50), ratio(r.p99, raw?.p99), ...(newKeys ? [fmt(r.newP50), ratio(r.newP50, raw.newP50)] : []), ...(vsHealthy ? [r.vsHealthy ? `${r.vsHealthy.toFixed(2)}x` : '-'] : [])];
  });
  const head = ['library', 'p50 µs', 'p99 µs', 'p50 / raw', 'p99 / raw', ...(newKeys ? ['new key p50 µs', 'new key / raw'] : []), ...(vsHealthy ? ['p50 / healthy'] : [])];
  table(title, head, rows, [...notes, ...extra]);
}

/** 8 processes take one key in a loop with 1 ms holds. */
async function contention(lib, round) {
  const n = 8;
  const key = `contended:${lib.replace(/\W+/g, '-')}:${round}:${Date.now()}`; // never one a previous run left held
  let waiting = n;
  let release;
  const allReady = new Promise((r) => (release = r));
  // startAt on worker.mjs's clock, the host's monotonic one.
  const arrived = () => --waiting === 0 && release({ startAt: Number(process.hrtime.bigint()) / 1e6 + 100, ms: P.cMs });
  const params = { key, hold: 1, grace: P.cGrace, limit: P.cMs + P.cGrace + 30_000 };
  // Every process keeps the load up until all have finished measuring (or died), then
  // stops: see worker.mjs. Once 'stop' is sent no measured call is open, so exits no
  // longer touch the measurement.
  const measuring = [];
  const drained = new Set();
  const drain = (who) => {
    drained.add(who);
    if (drained.size === n) for (const c of measuring) if (c.connected) c.send({ type: 'stop' });
  };
  const runs = await Promise.all(
    Array.from({ length: n }, (_, p) =>
      runWorker(lib, urls5, 'contend', { ...params, first: p === 0 }, {
        ready: () => (arrived(), allReady),
        failed: arrived,
        message: (m, child) => m.type === 'drained' && (measuring.push(child), drain(child)),
        // Called without a worker when one exited without a result: it measures no more.
        result: (child) => child || drain(Symbol('died')),
      }),
    ),
  );
  const error = runs.find((r) => r.error)?.error;
  if (runs.every((r) => !r.events)) return { error };
  const go = await allReady;
  const end = go.startAt + go.ms;
  const all = runs
    .flatMap((r, p) => (r.events ?? []).map(([asked, got, released, attempts, releaseDone]) => ({ p, asked, got, released, attempts, releaseDone })))
    .sort((a, b) => a.got - b.got);
  const inWindow = all.filter((e) => e.got <= end);
  const counts = runs.map((_, p) => inWindow.filter((e) => e.p === p).length);
  const handoffs = [];
  let overlaps = 0;
  for (let i = 1; i < all.length; i++) {
    if (all[i].got < all[i - 1].released) overlaps++;
    else if (all[i].p !== all[i - 1].p) handoffs.push(all[i].got - all[i - 1].released);
  }
  const ended = runs.flatMap((r) => r.gaveUp ?? []);
  const gaveUp = ended.filter((g) => g[2] !== 'still waiting');
  const stillWaiting = ended.filter((g) => g[2] === 'still waiting');
  const longestDone = Math.max(0, ...all.map((e) => e.got - e.asked), ...gaveUp.map(([asked, at]) => at - asked));
  const longestOpen = Math.max(0, ...stillWaiting.map(([asked, at]) => at - asked));
  return {
    perSecond: (inWindow.length / go.ms) * 1000,
    fairness: Math.min(...counts) / Math.max(1, ...counts),
    longestWait: Math.max(longestDone, longestOpen),
    longestWaitOpen: longestOpen > longestDone, // still waiting when measuring stopped: at least this long
    stillWaiting: stillWaiting.length,
    handoffP50: median(handoffs),
    // One round trip to a quorum under this very load: the release call.
    releaseP50: median(inWindow.map((e) => e.releaseDone - e.released)),
    handoffs: handoffs.length,
    sameProcessAgain: inWindow.length > 1 ? inWindow.slice(1).filter((e, i) => e.p === inWindow[i].p).length / (inWindow.length - 1) : 0,
    counts,
    attempts: inWindow.some((e) => e.attempts !== undefined && e.attempts !== null) ? inWindow.reduce((s, e) => s + (e.attempts ?? 0), 0) / inWindow.length : undefined,
    gaveUp: gaveUp.length,
    gaveUpFirst: gaveUp[0]?.[2],
    releaseErrors: runs.reduce((s, r) => s + (r.releaseErrors ?? 0), 0),
    overlaps,
    processErrors: runs.filter((r) => r.error).length,
    error,
  };
}

// --- the run ---------------------------------------------------------------

/** Kills the workers at once; the nodes are stopped by the promise (or, on exit, by the spawner's exit hook). */
const cleanup = () => {
  for (const child of children) child.kill('SIGKILL');
  return Promise.all(nodes.map((n) => n.stop()));
};
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    cleanup();
    if (copy) rmSync(copy, { recursive: true, force: true });
    process.exit(130);
  });
}

const dist = new URL('../dist/esm/core/index.js', bench);
if (!existsSync(dist)) {
  console.error('dist/esm is missing: run `npm run build` first (npm run bench does).');
  process.exit(1);
}
// The workers import a copy of the build: another build during the run cannot pull it away.
copy = new URL(`./.cache/${process.pid}/`, bench);
rmSync(copy, { recursive: true, force: true });
cpSync(new URL('../dist/esm/', bench), copy, { recursive: true });
snapshot = new URL('./core/index.js', copy).href;

for (let i = 0; i < 7; i++) nodes.push(await startNode());
const urls5 = nodes.slice(0, 5).map((n) => n.url);
try {
  console.log(`# nest-redlock benchmark${QUICK ? ' (--quick)' : ''}\n`);
  results.loadBefore = loadavg().map((x) => x.toFixed(2)).join(' ');
  console.log(`${results.date}\n${results.machine}, load average ${results.loadBefore} at the start\n${results.versions}`);
  console.log(`Nodes: local redis-server processes on loopback, no persistence; 5 nodes unless said otherwise. Every measurement in its own process.`);

  // Probe: every library installs, loads and does one cycle; the others are skipped.
  log('probing the libraries');
  const probes = await Promise.all(LIBS.map((l) => runWorker(l, urls5, 'probe', { limit: 20_000 })));
  LIBS.forEach((l, i) => {
    if (!probes[i].ok) results.skipped[l] = probes[i].error ?? 'no result';
  });
  for (const [l, why] of Object.entries(results.skipped)) console.log(`Skipped ${l}: ${why}`);
  LIBS = LIBS.filter((l) => !results.skipped[l]);
  if (!LIBS.includes('raw')) throw new Error(`the raw round cannot run: ${results.skipped.raw}`);
  const PEERS = LIBS.filter(isPeer);

  const CLIBS = MAIN(LIBS, 'contention');
  const DLIBS = MAIN(LIBS);
  LIBS = MAIN(LIBS, 'speed');

  // 1. Uncontended latency.
  if (want('uncontended')) {
    latencyTable(
      `Uncontended acquire + release, distinct keys (${P.rounds} rounds x ${P.cycles} cycles, median of per-round percentiles)`,
      await latency('uncontended', urls5, LIBS, { cycles: P.cycles, newKeys: true }, P.rounds),
      ['p50, p99: a resource locked before (64 keys, each locked in the warm-up); new key: the first lock of a resource (every other cycle).'],
    );
  }

  // 2. 64-way throughput.
  if (want('throughput')) {
    const tp = Object.fromEntries(LIBS.map((l) => [l, []]));
    const tpErrors = {};
    const tpCpu = Object.fromEntries(LIBS.map((l) => [l, []]));
    const tpServer = Object.fromEntries(LIBS.map((l) => [l, []]));
    for (let r = 0; r < P.tpRounds; r++) {
      log(`throughput: round ${r + 1}/${P.tpRounds}`);
      for (const lib of shuffle(LIBS)) {
        let before;
        let serverCpu;
        const res = await runWorker(lib, urls5, 'throughput', { concurrency: 64, ms: P.tpMs }, {
          ready: async () => void (before = await redisCpu(urls5)),
          result: async () => void (serverCpu = (await redisCpu(urls5)) - before),
        });
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

  // 3. Single-key contention.
  if (want('contention')) {
    const cRounds = Object.fromEntries(CLIBS.map((l) => [l, []]));
    for (let r = 0; r < P.cRounds; r++) {
      log(`contention: round ${r + 1}/${P.cRounds}`);
      for (const lib of shuffle(CLIBS)) cRounds[lib].push(await contention(lib, r));
    }
    const contended = {};
    for (const lib of CLIBS) {
      const rs = cRounds[lib].filter((c) => c.perSecond !== undefined);
      if (!rs.length) {
        contended[lib] = { error: cRounds[lib][0]?.error ?? 'failed', rounds: cRounds[lib] };
        continue;
      }
      const mid = [...rs].sort((a, b) => a.perSecond - b.perSecond)[Math.floor((rs.length - 1) / 2)];
      contended[lib] = {
        perSecond: median(rs.map((c) => c.perSecond)),
        fairness: median(rs.map((c) => c.fairness)),
        longestWait: median(rs.map((c) => c.longestWait)),
        longestWaitOpen: rs.some((c) => c.longestWaitOpen),
        stillWaiting: rs.reduce((s, c) => s + c.stillWaiting, 0),
        handoffP50: median(rs.map((c) => c.handoffP50)),
        releaseP50: median(rs.map((c) => c.releaseP50)),
        sameProcessAgain: median(rs.map((c) => c.sameProcessAgain)),
        counts: mid.counts,
        attempts: median(rs.map((c) => c.attempts)),
        gaveUp: rs.reduce((s, c) => s + c.gaveUp, 0),
        overlaps: rs.reduce((s, c) => s + c.overlaps, 0),
        rounds: cRounds[lib],
      };
    }
    results.scenarios.contention = contended;
    const cBest = Math.max(0, ...CLIBS.filter(isPeer).map((l) => contended[l].perSecond ?? 0));
    const cNotes = [
      'acq/s: acquisitions inside the window, all processes; worst/best: fewest / most acquisitions of one process;',
      `longest wait: longest single acquire call (measured up to ${P.cGrace / 1000} s after the window); hand-off: from a holder starting`,
      'its release to the next acquisition by another process; same process again: share of acquisitions that went to',
      'the process that had just released; in round trips: the hand-off over the median release call in the same run (one',
      'round to a quorum, under the same load); attempts / acq: mean attempts per acquisition, where the library reports them.',
      'Waiting settings:',
      ...CLIBS.map((l) => `  ${l}: ${adapters[l].waits}`),
    ];
    for (const l of CLIBS) {
      const c = contended[l];
      if (c.stillWaiting) cNotes.push(`${l}: ${c.stillWaiting} acquire calls were still waiting ${P.cGrace / 1000} s after the window (their wait is shown as ">=")`);
      if (c.gaveUp) cNotes.push(`${l}: ${c.gaveUp} acquire calls gave up over all rounds (${c.rounds.find((r) => r.gaveUpFirst)?.gaveUpFirst})`);
      if (c.overlaps) cNotes.push(`${l}: ${c.overlaps} acquisitions started before the previous holder's release (mutual exclusion broken, or clock skew between processes)`);
    }
    table(
      `8 processes, one key, 1 ms holds (${P.cRounds} round(s) x ${P.cMs / 1000} s, medians; per-process counts of the median round)`,
      ['library', 'acq/s', 'vs best peer', 'worst/best', 'longest wait ms', 'hand-off p50 ms', 'in round trips', 'same process again', 'attempts / acq', 'per process'],
      CLIBS.map((l) => {
        const c = contended[l];
        return c.error
          ? [l, `failed: ${c.error}`, '', '', '', '', '', '', '', '']
          : [l, fmt(c.perSecond), ratio(c.perSecond, cBest), c.fairness.toFixed(2), `${c.longestWaitOpen ? '>= ' : ''}${fmt(c.longestWait)}`, fmt(c.handoffP50, 2), fmt(c.handoffP50 / c.releaseP50, 1), `${(c.sameProcessAgain * 100).toFixed(0)}%`, fmt(c.attempts, 1), c.counts.join(' ')];
      }),
      cNotes,
    );
  }

  // 4. One node of five killed (kill -9) once the worker is connected and warm; restarted, empty, on the same port after.
  const degraded = { cycles: P.dCycles, deadline: P.dDeadline, limit: 60_000, baseline: true };
  if (want('oneDown')) {
    latencyTable(
      `One of 5 nodes down (killed after the clients connected; ${P.dRounds} round(s) x ${P.dCycles} cycles)`,
      await latency('oneDown', urls5, DLIBS, degraded, P.dRounds, () => {
        let down = false;
        return {
          ready: async () => {
            await nodes[4].kill();
            down = true;
          },
          result: async () => {
            if (!down) return;
            down = false;
            await nodes[4].restart();
          },
        };
      }),
      ['p50 / healthy: over the same process\'s p50 on all 5 nodes just before the kill (median over rounds).'],
    );
  }

  // 5. Two nodes of five paused (SIGSTOP) once the worker is connected and warm, resumed after.
  if (want('twoPaused')) {
    const paused = [nodes[3], nodes[4]];
    latencyTable(
      `Two of 5 nodes paused (SIGSTOP after the clients connected; ${P.dRounds} round(s) x ${P.dCycles} cycles; each operation bounded by ${P.dDeadline / 1000} s)`,
      await latency('twoPaused', urls5, DLIBS, degraded, P.dRounds, () => ({
        ready: async () => void (await Promise.all(paused.map((n) => n.pause()))),
        result: () => Promise.all(paused.map((n) => n.resume())),
      })),
      [
        '"timeout": 3 acquire or release calls did not finish within the deadline (the library waits for every node).',
        'p50 / healthy: over the same process\'s p50 on all 5 nodes just before the pause (median over rounds).',
      ],
    );
  }

  // 6. Memory.
  if (want('memory')) {
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
          : [l, fmt(m.heapDelta / 1024), fmt(m.heapUsed / 2 ** 20, 1), fmt(m.rss / 2 ** 20, 1), fmt(m.rssDelta / 2 ** 20, 1), ratio(m.rss, memory.raw?.rss), fmt(m.done / m.seconds), m.failed];
      }),
      [
        `Runs until ${P.memCycles / 1000}k cycles succeeded (at most ${(3 * P.memCycles) / 1000}k tried); heap growth and RSS growth: after the run minus after the warm-up.`,
        ...DLIBS.filter((l) => memory[l].failed).map((l) => `${l}: ${memory[l].failed} failed cycles (first: ${memory[l].firstError})`),
      ],
    );
  }

  // 7. Node count.
  if (want('nodes')) {
    const NLIBS = LIBS.filter((l) => !isPeer(l));
    const scale = {};
    for (const n of [1, 3, 5, 7]) {
      scale[n] = await latency(`n${n}`, nodes.slice(0, n).map((x) => x.url), NLIBS, { cycles: P.nCycles }, P.nRounds);
      delete results.scenarios[`n${n}`];
    }
    results.scenarios.nodes = scale;
    table(
      `Uncontended cycle by node count, p50 µs (${P.nRounds} round(s) x ${P.nCycles} cycles)`,
      ['N', ...NLIBS.flatMap((l) => (l === 'raw' ? [l] : [l, `${l} / raw`]))],
      Object.entries(scale).map(([n, s]) => [n, ...NLIBS.flatMap((l) => (l === 'raw' ? [fmt(s.raw.p50)] : [fmt(s[l].p50), ratio(s[l].p50, s.raw.p50)]))]),
    );
  }
} finally {
  await cleanup();
  rmSync(copy, { recursive: true, force: true });
  try {
    rmdirSync(new URL('./.cache/', bench)); // when no other run uses it
  } catch {}
}
results.seconds = Math.round((performance.now() - started) / 1000);
results.loadAfter = loadavg().map((x) => x.toFixed(2)).join(' ');
mkdirSync(new URL('./results/', bench), { recursive: true });
// A run of some scenarios or libraries only does not replace the last complete one.
const file = scenarios || only ? 'partial.json' : 'latest.json';
writeFileSync(new URL(`./results/${file}`, bench), `${JSON.stringify(results, null, 2)}\n`);
console.log(`\nFinished in ${results.seconds} s (load average ${results.loadAfter}); results in bench/results/${file}`);

function machine() {
  const model = readFileSync('/proc/cpuinfo', 'utf8').match(/model name\s*:\s*(.*)/)?.[1]?.trim() ?? 'unknown cpu';
  const redis = execFileSync(serverBinary(), ['--version']).toString().match(/v=(\S+)/)?.[1];
  return `${model}, ${cpus().length} cores, Node ${process.version}, redis-server ${redis}`;
}

function versions() {
  const version = (name) => {
    try {
      return JSON.parse(readFileSync(new URL(`./node_modules/${name}/package.json`, bench), 'utf8')).version;
    } catch {
      return 'not installed';
    }
  };
  const own = JSON.parse(readFileSync(new URL('../package.json', bench), 'utf8')).version;
  return [
    `nest-redlock ${own} (this checkout's dist/esm)`,
    `node-redlock ${version('redlock5')} and ${version('redlock4')}`,
    `@sesamecare-oss/redlock ${version('@sesamecare-oss/redlock')}`,
    `redis-semaphore ${version('redis-semaphore')}`,
    `ioredis ${version('ioredis')} (all libraries)`,
  ].join(', ');
}
