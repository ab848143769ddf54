// npm run bench [-- --quick]
//
// This library against node-redlock (v5 and v4), @sesamecare-oss/redlock and
// redis-semaphore's RedlockMutex (and its RedlockSemaphore in the semaphore scenario), and against a raw round written directly with
// ioredis, on the same local redis-server nodes started here. Every measurement
// runs in its own process (worker.mjs, one adapter per library in
// adapters/index.mjs); libraries are interleaved in a fresh random order each
// round, and the tables show medians over rounds. Results also go to
// bench/results/latest.json (bench/results/partial.json for a partial run).
//
// --quick: about a minute (fewer rounds, cycles and shorter runs).
// --only=uncontended,memory,...: run only those scenarios.
// BENCH_LIBS=nest-redlock,raw,...: run only those libraries.
//
// This file sets up (a copy of the build, 7 nodes), probes the libraries and runs
// the scenarios of scenarios/ in order; settings.mjs holds the numbers of a run,
// workers.mjs the worker processes, report.mjs the statistics and tables.
import { cpSync, existsSync, mkdirSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { adapters, ioredisCopies } from './adapters/index.mjs';
import { startNode } from '../scripts/redis-spawner.mjs';
import { ioredisSetups, machine, versions } from './environment.mjs';
import { elapsedSeconds, log } from './report.mjs';
import { MAIN, P, QUICK, isPeer, only, scenarios, want } from './settings.mjs';
import { killWorkers, runWorker, useBuild } from './workers.mjs';
import { contention } from './scenarios/contention.mjs';
import { oneDown, twoPaused } from './scenarios/degraded.mjs';
import { memory } from './scenarios/memory.mjs';
import { nodeCount } from './scenarios/node-count.mjs';
import { semaphore } from './scenarios/semaphore.mjs';
import { throughput } from './scenarios/throughput.mjs';
import { uncontended } from './scenarios/uncontended.mjs';

/** The scenarios, by their --only names, in the order they run. */
const SCENARIOS = { uncontended, throughput, contention, semaphore, oneDown, twoPaused, memory, nodes: nodeCount };

const bench = new URL('./', import.meta.url);
const dist = new URL('../dist/esm/core/index.js', bench);
if (!existsSync(dist)) {
  console.error('dist/esm is missing: run `npm run build` first (npm run bench does).');
  process.exit(1);
}
// The workers import a copy of the build: another build during the run cannot pull it away.
// Where it sits decides which ioredis copy it resolves (see ioredisCopies).
const copy = new URL(`./.cache/${process.pid}/`, bench);
useBuild(new URL('./core/index.js', copy).href);
process.env.BENCH_NEST_REDLOCK = new URL('./core/index.js', copy).href;
// --baseline=<copy of an older dist/esm>: that build runs too, as `nest-redlock (baseline)` (see adapters).
const baseline = process.argv.find((a) => a.startsWith('--baseline='))?.slice(11);
if (baseline) process.env.BENCH_NEST_REDLOCK_BASELINE = new URL('./baseline/core/index.js', copy).href;
const copies = ioredisCopies();
let LIBS = Object.keys(adapters).filter(
  (l) =>
    (!only || l === 'raw' || only.includes(l)) &&
    (adapters[l].clients !== 'other' || copies.other !== copies.same) &&
    (!adapters[l].baseline || baseline !== undefined),
);
const results = {
  date: new Date().toISOString(),
  quick: QUICK,
  params: P,
  machine: machine(),
  versions: versions(),
  ioredis: ioredisSetups(),
  waiting: Object.fromEntries(LIBS.map((l) => [l, adapters[l].waits])),
  skipped: {},
  scenarios: {},
};

const nodes = [];

/** Kills the workers at once; the nodes are stopped by the promise (or, on exit, by the spawner's exit hook). */
const cleanup = () => {
  killWorkers();
  return Promise.all(nodes.map((n) => n.stop()));
};
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    cleanup();
    if (copy) rmSync(copy, { recursive: true, force: true });
    process.exit(130);
  });
}

rmSync(copy, { recursive: true, force: true });
cpSync(new URL('../dist/esm/', bench), copy, { recursive: true });
if (baseline) cpSync(baseline, new URL('./baseline/', copy), { recursive: true });

for (let i = 0; i < 7; i++) nodes.push(await startNode());
const urls5 = nodes.slice(0, 5).map((n) => n.url);
try {
  console.log(`# nest-redlock benchmark${QUICK ? ' (--quick)' : ''}\n`);
  results.loadBefore = loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');
  console.log(`${results.date}\n${results.machine}, load average ${results.loadBefore} at the start\n${results.versions}`);
  console.log(
    `Nodes: local redis-server processes on loopback, no persistence; 5 nodes unless said otherwise. Every measurement in its own process.`,
  );
  const io = results.ioredis;
  console.log(
    `Clients: every other library and the raw round get ioredis clients of ${io.peers}. nest-redlock's build resolves ioredis at ` +
      `${io.library}: "nest-redlock" rows open their own connections from URLs with it; "clients passed in, same ioredis copy" ` +
      `rows get clients of ${io.same}${io.other ? `, "other ioredis copy" rows clients of ${io.other}` : ' (no other copy is installed: those rows are skipped)'}.`,
  );

  // Probe: every library installs, loads and does one cycle; the others are skipped.
  log('probing the libraries');
  const probes = await Promise.all(LIBS.map((l) => runWorker(l, urls5, 'probe', { limit: 20_000 })));
  LIBS.forEach((l, i) => {
    if (!probes[i].ok) results.skipped[l] = probes[i].error ?? 'no result';
  });
  for (const [l, why] of Object.entries(results.skipped)) console.log(`Skipped ${l}: ${why}`);
  LIBS = LIBS.filter((l) => !results.skipped[l]);
  if (!LIBS.includes('raw')) throw new Error(`the raw round cannot run: ${results.skipped.raw}`);

  // Each kind of scenario runs the libraries plus the nest-redlock variants made for it.
  const libs = {
    speed: MAIN(LIBS, 'speed'),
    contention: MAIN(LIBS, 'contention'),
    semaphore: LIBS.filter((l) => adapters[l].variant === 'semaphore'),
    degraded: MAIN(LIBS),
    peers: MAIN(LIBS).filter(isPeer),
  };
  const run = { results, nodes, urls5, libs };
  for (const [name, scenario] of Object.entries(SCENARIOS)) if (want(name)) await scenario(run);
} finally {
  await cleanup();
  rmSync(copy, { recursive: true, force: true });
  try {
    rmdirSync(new URL('./.cache/', bench)); // when no other run uses it
  } catch {
    // another run still uses it
  }
}
results.seconds = Math.round(elapsedSeconds());
results.loadAfter = loadavg()
  .map((x) => x.toFixed(2))
  .join(' ');
mkdirSync(new URL('./results/', bench), { recursive: true });
// A run of some scenarios or libraries only does not replace the last complete one.
const file = scenarios || only ? 'partial.json' : 'latest.json';
writeFileSync(new URL(`./results/${file}`, bench), `${JSON.stringify(results, null, 2)}\n`);
console.log(`\nFinished in ${results.seconds} s (load average ${results.loadAfter}); results in bench/results/${file}`);
