// What a node spends on the scripts of a contended semaphore, apart from the machine's noise
// (`node bench/script-replay.mjs`, after `npm run build`; `--baseline=<copy of an older
// dist/esm>` compares that build's scripts with this one's on the same commands).
//
// Under load, a node's time per script swings with the clients it shares the cores with
// (INFO commandstats read 33.6 µs per EVALSHA of this library's semaphore in
// `permit-cpu.mjs`, about three times what the same scripts take alone), and a change
// worth a few percent of it drowns in the benchmark's noise between runs. So:
// - Capture: 16 clients of this build in one process take permits of one semaphore of
//   limit 4 (1 ms holds) on 5 local nodes for `--warmup` s, then `--capture` s more while
//   MONITOR records what node 1 is sent (the clients' EVALSHAs, not the scripts' inner
//   calls).
// - Replay: each build's scripts, loaded by name (the capture names this build's; a
//   baseline whose scripts take other arguments cannot be compared this way), run the
//   captured commands in their order on a node of their own, nothing else running, in
//   `--passes` passes interleaved between builds, each from an empty node. Per pass, from
//   INFO commandstats: µs per script, and the calls the scripts made (their count, and
//   their own µs). What a script takes beyond its calls' own µs is its Lua and the cost of
//   each call (arguments made Redis strings, the command looked up and timed, the reply
//   made Lua again).
// The replay runs faster than the capture, so fewer queue entries go stale: it measures
// the scripts' usual paths, not their clean-ups.
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { startNodes } from '../scripts/redis-spawner.mjs';
import { median, option, shuffle } from './report.mjs';
import { Redis } from 'ioredis';

const WARMUP = Number(option('warmup', 20));
const CAPTURE = Number(option('capture', 3));
const PASSES = Number(option('passes', 7));
const BASELINE = option('baseline', undefined);
const CLIENTS = 16;
const LIMIT = 4;

const builds = { 'this build': resolve('dist/esm') };
if (BASELINE) builds.baseline = resolve(BASELINE);
const scriptsOf = async (dir) => (await import(pathToFileURL(resolve(dir, 'core/scripts.js')).href)).NODE_SCRIPTS;

/** The EVALSHAs node 1 was sent while this build's clients contended for one semaphore. */
async function capture(urls) {
  const { Redlock } = await import(pathToFileURL(resolve(builds['this build'], 'index.js')).href);
  const clients = Array.from({ length: CLIENTS }, () => new Redlock({ nodes: urls, retryCount: 1_000_000 }));
  let running = true;
  const loops = clients.map(async (redlock) => {
    while (running) {
      const lock = await redlock.acquire('replay', 30_000, { limit: LIMIT });
      await sleep(1);
      await lock.release();
    }
  });
  await sleep(WARMUP * 1000);
  const commands = await monitor(urls[0], CAPTURE * 1000);
  running = false;
  await Promise.all(loops);
  await Promise.all(clients.map((c) => c.close()));
  return commands;
}

/**
 * The EVALSHAs sent to the node at `url` by clients (not the scripts' inner calls) for
 * `ms`, as MONITOR shows them: `+<time> [<db> <client>] "evalsha" "<sha>" ...`. A socket
 * of its own: ioredis's monitor mode misreads a line that comes with MONITOR's OK.
 */
function monitor(url, ms) {
  const { hostname, port } = new URL(url);
  return new Promise((done, fail) => {
    const commands = [];
    let pending = '';
    const socket = connect(Number(port), hostname, () => socket.write('MONITOR\r\n'));
    socket.setEncoding('utf8');
    socket.on('error', fail);
    socket.on('data', (chunk) => {
      const lines = (pending + chunk).split('\r\n');
      pending = lines.pop();
      for (const line of lines) {
        const at = line.indexOf('] "');
        if (at < 0 || line.includes(' lua] ')) continue;
        const args = [...line.slice(at + 2).matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((m) => m[1].replace(/\\(.)/g, '$1'));
        if (args[0].toLowerCase() === 'evalsha') commands.push(args.slice(1));
      }
    });
    setTimeout(() => {
      socket.destroy();
      done(commands);
    }, ms);
  });
}

/** Per build and pass: µs per script, inner calls per script, their µs per script. */
async function replay(url, commands) {
  const node = new Redis(url);
  const captured = Object.fromEntries((await scriptsOf(builds['this build'])).map((s) => [s.sha, s.name]));
  const shas = {};
  for (const [build, dir] of Object.entries(builds)) {
    const byName = Object.fromEntries((await scriptsOf(dir)).map((s) => [s.name, s.lua]));
    shas[build] = {};
    for (const [sha, name] of Object.entries(captured)) if (byName[name]) shas[build][sha] = await node.script('LOAD', byName[name]);
  }
  const passes = Object.fromEntries(Object.keys(builds).map((b) => [b, []]));
  for (let p = 0; p < PASSES; p++) {
    for (const build of shuffle(Object.keys(builds))) {
      await node.flushall();
      await node.config('RESETSTAT');
      for (let i = 0; i < commands.length; i += 50) {
        const batch = node.pipeline();
        for (const [sha, ...rest] of commands.slice(i, i + 50)) batch.evalsha(shas[build][sha] ?? sha, ...rest);
        await batch.exec();
      }
      const stats = [...(await node.info('commandstats')).matchAll(/cmdstat_(\w+):calls=(\d+),usec=(\d+)/g)].map(
        ([, name, calls, usec]) => ({
          name,
          calls: Number(calls),
          usec: Number(usec),
        }),
      );
      const scripts = stats.find((s) => s.name === 'evalsha');
      const inner = stats.filter((s) => !['evalsha', 'flushall', 'config', 'info'].includes(s.name));
      const sum = (k) => inner.reduce((total, s) => total + s[k], 0);
      passes[build].push({ us: scripts.usec / scripts.calls, calls: sum('calls') / scripts.calls, innerUs: sum('usec') / scripts.calls });
    }
  }
  node.disconnect();
  return passes;
}

const fleet = await startNodes(5);
try {
  const commands = await capture(fleet.urls);
  const passes = await replay(fleet.urls[1], commands);
  console.log(`\n### A node's µs per script of a contended semaphore, replayed (${commands.length} scripts, ${PASSES} passes; medians)\n`);
  console.log('| build | µs / script | per pass | calls / script | their µs / script | the rest, µs / script |');
  console.log('|---|---|---|---|---|---|');
  for (const [build, ps] of Object.entries(passes)) {
    const us = median(ps.map((p) => p.us));
    const innerUs = median(ps.map((p) => p.innerUs));
    const each = ps.map((p) => p.us.toFixed(2)).join(' ');
    console.log(
      `| ${build} | ${us.toFixed(2)} | ${each} | ${median(ps.map((p) => p.calls)).toFixed(2)} | ${innerUs.toFixed(2)} | ${(us - innerUs).toFixed(2)} |`,
    );
  }
} finally {
  await fleet.stop();
}
