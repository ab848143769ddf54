// Client CPU of one uncontended acquire + release cycle, against the raw round
// (`node bench/cycle-cpu.mjs`, after `npm run build` and `npm --prefix bench install`).
//
// One process, 5 local nodes, one caller. The libraries (adapters/index.mjs:
// `raw` and `nest-redlock` by default, `--libs=a,b` for others) run in blocks of
// `--cycles` cycles on 64 reused keys, interleaved in a new random order in each
// of `--rounds` rounds after a warm-up; each block's CPU (process.cpuUsage, user +
// system, ioredis included) per cycle. CPU time is much less sensitive to the
// machine's load than latency (nest-redlock gets a 2 s node timeout, so that
// load does not turn cycles into failures), and a ratio taken in the same interleaved run
// cancels most of what remains. Prints, per library, the median over rounds of
// CPU µs per cycle and its ratio to the raw round's median.
//
// `--baseline=<dir>`: also runs `nest-redlock` from another build (a copy of an
// older dist/esm, e.g. in .tmp/ so that it resolves the same ioredis), as
// `nest-redlock (baseline)`: a before/after comparison in one interleaved run.
//
// `--profile=<lib>`: run only that library, and only its measured blocks under
// the V8 CPU profiler (written to bench/results/profiles/, for DevTools or
// `node bench/profile-summary.mjs <file>`): warm-up excluded.
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { startNode } from '../scripts/redis-spawner.mjs';
import { adapters } from './adapters/index.mjs';
import { startProfile, writeProfile } from './cpu-profile.mjs';
import { median, option, shuffle } from './report.mjs';

const ROUNDS = Number(option('rounds', 7));
const CYCLES = Number(option('cycles', 2000));
const WARMUP = Number(option('warmup', 3000));
const PROFILE = option('profile', undefined);
const BASELINE = option('baseline', undefined);
const LIBS = PROFILE ? [PROFILE] : option('libs', 'raw,nest-redlock').split(',');
if (BASELINE) LIBS.push('nest-redlock (baseline)');

const nodes = await Promise.all(Array.from({ length: 5 }, () => startNode()));
try {
  const urls = nodes.map((n) => n.url);
  const libs = {};
  for (const name of LIBS) {
    const baseline = name === 'nest-redlock (baseline)';
    const build = process.env.BENCH_NEST_REDLOCK;
    if (baseline) process.env.BENCH_NEST_REDLOCK = pathToFileURL(resolve(BASELINE, 'core/index.js')).href;
    libs[name] = await adapters[baseline ? 'nest-redlock' : name].create(urls, { wait: false, nodeTimeout: 2000 });
    if (build === undefined) delete process.env.BENCH_NEST_REDLOCK;
    else process.env.BENCH_NEST_REDLOCK = build;
    await libs[name].ready();
  }
  // A cycle that fails (a node timeout on a loaded machine) is counted, not retried.
  const failed = Object.fromEntries(LIBS.map((l) => [l, 0]));
  const block = async (name, n) => {
    const lib = libs[name];
    for (let i = 0; i < n; i++) {
      await lib
        .acquire(`cpu:${name}:${i % 64}`, 10_000)
        .then((handle) => lib.release(handle))
        .catch(() => failed[name]++);
    }
  };
  for (const name of LIBS) await block(name, WARMUP);

  const session = PROFILE ? await startProfile(50) : undefined;
  const cpu = Object.fromEntries(LIBS.map((l) => [l, []]));
  for (let r = 0; r < ROUNDS; r++) {
    for (const name of shuffle(LIBS)) {
      const before = process.cpuUsage();
      await block(name, CYCLES);
      const used = process.cpuUsage(before);
      cpu[name].push((used.user + used.system) / CYCLES);
    }
  }
  if (session) await writeProfile(session, PROFILE);
  for (const name of LIBS) await libs[name].close();

  const raw = median(cpu.raw ?? []);
  console.log(`\n### Client CPU per uncontended cycle (${ROUNDS} rounds x ${CYCLES} cycles, 5 nodes, one caller; medians)\n`);
  console.log('| library | CPU µs / cycle | / raw | per round | failed cycles |');
  console.log('|---|---|---|---|---|');
  for (const name of LIBS) {
    const m = median(cpu[name]);
    console.log(
      `| ${name} | ${m.toFixed(1)} | ${raw ? `${(m / raw).toFixed(2)}x` : '-'} | ${cpu[name].map((x) => x.toFixed(0)).join(' ')} | ${failed[name]} |`,
    );
  }
} finally {
  await Promise.all(nodes.map((n) => n.stop()));
}
