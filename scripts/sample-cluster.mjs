// `npm run sample:cluster`: three instances of the compiled sample (a, b, c on
// ports 3001-3003) against the same three local redis nodes, for SAMPLE_SECONDS
// (default 22) once all are up. Their output is shown prefixed with the
// instance name and parsed; the summary shows that the 5-second cron job ran
// once per tick across the three. Exit code 0 when no tick ran twice, 1 otherwise.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { findOnPath, installHint, serverBinary } from './redis-server.mjs';
import { startNodes } from './redis-spawner.mjs';

const MAIN = fileURLToPath(new URL('../dist-sample/sample/main.js', import.meta.url));
const SECONDS = Number(process.env.SAMPLE_SECONDS ?? 22);
const TICK = 5000;
const START_TIMEOUT = 20_000;
const STOP_TIMEOUT = 10_000;
const say = (message) => console.log(`[cluster] ${message}`);
// eslint-disable-next-line no-control-regex -- ANSI colour codes in the app's output
const ANSI = /\x1b\[[0-9;]*m/g;
const hms = (ms) => new Date(ms).toISOString().slice(11, 19);

if (!(SECONDS > 0)) {
  console.error(`[cluster] SAMPLE_SECONDS must be a positive number, not ${process.env.SAMPLE_SECONDS}`);
  process.exit(2);
}
if (!existsSync(MAIN)) {
  console.error(`[cluster] ${MAIN} is missing: compile first (npm run sample:cluster does)`);
  process.exit(2);
}

let interrupted = false;
let wake = () => undefined; // ends the current wait early on SIGINT/SIGTERM
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => {
    if (!interrupted) say(`${signal}: stopping early`);
    interrupted = true;
    wake();
  });
}
const pause = (ms) => (interrupted ? Promise.resolve() : new Promise((resolve) => ((wake = resolve), setTimeout(resolve, ms).unref())));

if (!findOnPath(serverBinary())) {
  // In-memory nodes live in one process; the three instances need nodes they share.
  console.error(`[cluster] ${serverBinary()} is not on PATH: ${installHint()} (npm run sample runs without it)`);
  process.exit(2);
}
const nodes = await startNodes(3).catch((error) => {
  console.error(`[cluster] could not start local redis nodes: ${error.message}`);
  process.exit(2);
});
say(`started 3 local redis-server nodes: ${nodes.nodes.map((n) => `${n.url} (pid ${n.pid})`).join(', ')}`);

/** Parsed from the instances' output. */
const runs = []; // { instance, tick, pid, token }
const instances = ['a', 'b', 'c'].map((name, i) => ({ name, port: 3001 + i, ready: false, skipped: 0, errors: 0 }));

for (const instance of instances) {
  const child = spawn(process.execPath, ['--enable-source-maps', MAIN], {
    env: {
      ...process.env,
      REDLOCK_NODES: nodes.urls.join(','),
      PORT: String(instance.port),
      SAMPLE_INSTANCE: instance.name,
      NO_COLOR: '1',
    },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'], // IPC: the instance stops if this script dies
  });
  instance.child = child;
  instance.pid = child.pid;
  instance.exited = new Promise((resolve) => child.once('close', (code, signal) => resolve(signal ?? code)));
  child.once('error', (error) => say(`${instance.name}: ${error.message}`));
  const onLine = (line) => {
    line = line.replace(ANSI, '');
    console.log(`${instance.name} | ${line}`);
    if (/\[Sample\] Instance \S+ \(pid \d+\) listening/.test(line)) instance.ready = true;
    if (/\b(ERROR|WARN)\b/.test(line)) instance.errors++;
    if (/\[LockEvents\] skipped ReportJob\.report/.test(line)) instance.skipped++;
    const run = /\[ReportJob\] report run tick=(\S+) instance=(\S+) pid=(\d+) fencingToken=(\S+)/.exec(line);
    if (run) runs.push({ instance: run[2], tick: Date.parse(run[1]), pid: Number(run[3]), token: Number(run[4]) });
  };
  createInterface({ input: child.stdout }).on('line', onLine);
  createInterface({ input: child.stderr }).on('line', onLine);
}

// Wait for the three to listen.
const startDeadline = Date.now() + START_TIMEOUT;
while (!interrupted && !instances.every((i) => i.ready)) {
  const gone = instances.find((i) => i.child.exitCode !== null || i.child.signalCode !== null);
  if (gone || Date.now() > startDeadline) {
    say(gone ? `instance ${gone.name} exited during start-up` : `instances not up within ${START_TIMEOUT / 1000} s`);
    interrupted = true;
    break;
  }
  await sleep(50);
}
const upAt = Date.now();

// The @Locked HTTP endpoint across instances: pay the same order on a, b and c at once.
let payments = [];
if (!interrupted) {
  say(`all three up; running for ${SECONDS} s. Paying order 42 on a, b and c at once:`);
  payments = await Promise.all(
    instances.map(async ({ name, port }) => {
      try {
        const response = await fetch(`http://127.0.0.1:${port}/orders/42/pay`, { method: 'POST' });
        return { name, status: response.status, body: await response.json() };
      } catch (error) {
        return { name, status: 'failed', body: error.message };
      }
    }),
  );
  for (const p of payments) say(`  ${p.name}: HTTP ${p.status} ${JSON.stringify(p.body)}`);
  await pause(upAt + SECONDS * 1000 - Date.now());
}
const stopAt = Date.now();

// Stop the instances (graceful: they release their locks), then the nodes.
say('stopping the instances');
for (const { child } of instances) if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
const stopped = await Promise.race([Promise.all(instances.map((i) => i.exited)).then(() => true), sleep(STOP_TIMEOUT).then(() => false)]);
if (!stopped) {
  say(`instances still running after ${STOP_TIMEOUT / 1000} s: killing them`);
  for (const { child } of instances) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await Promise.all(instances.map((i) => i.exited));
}
await nodes.stop();
say('instances and redis nodes stopped');

// Summary.
const byTick = new Map();
for (const run of runs) byTick.set(run.tick, [...(byTick.get(run.tick) ?? []), run]);
const ticks = [...byTick.keys()].sort((x, y) => x - y);
// Ticks that all three instances were up for, start to end.
const expected = [];
for (let t = Math.ceil((upAt + 1) / TICK) * TICK; t + 1000 < stopAt; t += TICK) expected.push(t);
const twice = ticks.filter((t) => byTick.get(t).length > 1);
const missed = expected.filter((t) => !byTick.has(t));
const tokens = ticks.map((t) => byTick.get(t)[0].token);
const increasing = tokens.every((token, i) => i === 0 || token > tokens[i - 1]);

const lines = [
  '',
  `==== summary: 3 instances, ${((stopAt - upAt) / 1000).toFixed(1)} s, nodes ${nodes.urls.join(' ')} ====`,
  'report job (@Cron every 5 s + @Locked) runs per instance:',
  ...instances.map(
    (i) =>
      `  ${i.name}  pid ${String(i.pid).padEnd(7)} :${i.port}  ran ${runs.filter((r) => r.instance === i.name).length}, ` +
      `skipped ${i.skipped} (lock held elsewhere)${i.errors ? `, ${i.errors} warning/error line(s)` : ''}`,
  ),
  'runs per 5-second tick (UTC):',
  ...ticks.map((t) => {
    const list = byTick.get(t);
    const who = list.map((r) => `${r.instance} (fencing token ${r.token})`).join(', ');
    return `  ${hms(t)}  ${list.length === 1 ? 'once ' : `${list.length} times`}  ${who}`;
  }),
  `ticks with all three up: ${expected.length}; ran once: ${expected.filter((t) => byTick.get(t)?.length === 1).length}; ` +
    `missed: ${missed.length}${missed.length ? ` (${missed.map(hms).join(', ')})` : ''}`,
  `fencing tokens increase tick after tick: ${increasing ? 'yes' : 'NO'}`,
  `POST /orders/42/pay on a, b, c at once: ${payments.map((p) => `${p.name} ${p.status}`).join(', ') || 'not run'}`,
  twice.length
    ? `FAIL: ${twice.length} tick(s) ran more than once: ${twice.map(hms).join(', ')}`
    : `OK: no tick ran twice (${ticks.length} tick(s) ran, each on exactly one instance)`,
];
console.log(lines.join('\n'));
process.exit(twice.length ? 1 : 0);
