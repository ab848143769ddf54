// What the minor GCs promote to the old generation per lock, and what a long run of 64
// callers does with it (`node bench/heap-promotion.mjs`, after `npm run build`;
// `--baseline=<copy of an older dist/esm>` runs that build too, in turn with this one).
//
// Per scenario and build, one child process (5 local nodes, one client) locks in loops for
// `--warmup` seconds, then for `--seconds` more under `--trace-gc-nvp`: the `promoted=` of
// the minor GCs in that window, over the locks taken in it. Scenarios: one caller, and 8
// callers, on distinct resources; 4 callers on one resource (1 ms holds, fair waiting); 8
// callers on one semaphore of limit 4 (1 ms holds).
// Then 64 callers on distinct resources for `--long` seconds: cycles per 3 s window, and
// the mark-compacts in it (a PerformanceObserver on `gc` entries).
import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { PerformanceObserver, constants } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { startNodes } from '../scripts/redis-spawner.mjs';
import { option } from './report.mjs';

const SCENARIOS = {
  'one caller, distinct resources': { callers: 1, shared: false },
  '8 callers, distinct resources': { callers: 8, shared: false },
  '4 callers, one resource, 1 ms holds': { callers: 4, shared: true },
  '8 callers, one semaphore of limit 4, 1 ms holds': { callers: 8, shared: true, limit: 4 },
};

if (process.argv[2] === 'child') {
  const { build, urls, callers, shared, limit, warmup, seconds, long } = JSON.parse(process.argv[3]);
  const { Redlock } = await import(build);
  const redlock = new Redlock({ nodes: urls, retryCount: shared ? 1_000_000 : 0 });
  let n = 0;
  const loops = (until, count, onCycle = () => undefined) =>
    Promise.all(
      Array.from({ length: count }, async () => {
        while (Date.now() < until) {
          const lock = await redlock.acquire(
            shared ? `heap:shared${limit ? ':sem' : ''}` : `heap:${n++ % 4096}`,
            10_000,
            limit ? { limit } : {},
          );
          if (shared) await sleep(1);
          await lock.release();
          onCycle();
        }
      }),
    );
  if (long) {
    let major = 0;
    let cycles = 0;
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) if (e.detail.kind === constants.NODE_PERFORMANCE_GC_MAJOR) major++;
    }).observe({ entryTypes: ['gc'] });
    const windows = [];
    const tick = setInterval(() => {
      windows.push(`${(cycles / 3000).toFixed(1)}k (${major})`);
      cycles = major = 0;
    }, 3000);
    await loops(Date.now() + long * 1000, 64, () => cycles++);
    clearInterval(tick);
    console.log(`RESULT ${JSON.stringify(windows)}`);
  } else {
    await loops(Date.now() + warmup * 1000, callers);
    const from = Math.round(performance.now());
    let locks = 0;
    await loops(Date.now() + seconds * 1000, callers, () => locks++);
    console.log(`RESULT ${JSON.stringify({ from, to: Math.round(performance.now()), locks })}`);
  }
  await redlock.close();
  process.exit(0);
}

const builds = { 'this build': resolve('dist/esm/index.js') };
const baseline = option('baseline', undefined);
if (baseline) builds.baseline = resolve(baseline, 'index.js');
const warmup = Number(option('warmup', 8));
const seconds = Number(option('seconds', 8));
const long = Number(option('long', 24));
const fleet = await startNodes(5);

/** Runs a child; its output's RESULT line, and the GC lines (--trace-gc-nvp) when asked. */
function child(build, params, nvp) {
  const out = execFileSync(
    process.execPath,
    [
      ...(nvp ? ['--trace-gc-nvp'] : []),
      fileURLToPath(import.meta.url),
      'child',
      JSON.stringify({ build: pathToFileURL(build).href, urls: fleet.urls, ...params }),
    ],
    { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 },
  );
  return { result: JSON.parse(out.match(/^RESULT (.*)$/m)[1]), lines: out.split('\n') };
}

try {
  console.log('\n| scenario | ' + Object.keys(builds).join(' | ') + ' |');
  console.log(
    '|---|' +
      Object.keys(builds)
        .map(() => '---')
        .join('|') +
      '|',
  );
  for (const [name, scenario] of Object.entries(SCENARIOS)) {
    const cells = [];
    for (const build of Object.values(builds)) {
      const { result, lines } = child(build, { ...scenario, warmup, seconds }, true);
      let promoted = 0;
      for (const line of lines) {
        // "[pid:isolate]    12345 ms: pause=... gc=s ... promoted=N ...": minor GCs in the window (ms since the process began).
        const at = Number(line.match(/^\[[^\]]*\]\s+(\d+) ms: /)?.[1]);
        if (!line.includes(' gc=s ') || !(at >= result.from && at <= result.to)) continue;
        promoted += Number(line.match(/ promoted=(\d+)/)[1]);
      }
      cells.push(`${(promoted / result.locks).toFixed(0)} bytes (${result.locks} locks)`);
    }
    console.log(`| ${name} | ${cells.join(' | ')} |`);
  }
  console.log("\npromoted per lock: the minor GCs' `promoted=` (node --trace-gc-nvp) in the measured window, over the locks taken in it.");
  console.log(`\n64 callers, distinct resources, ${long} s: cycles/s per 3 s window (mark-compacts in it)\n`);
  for (const [name, build] of Object.entries(builds)) console.log(`- ${name}: ${child(build, { long }, false).result.join(', ')}`);
} finally {
  await fleet.stop();
}
