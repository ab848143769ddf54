// What one permit of a contended semaphore costs, client and servers
// (`node bench/permit-cpu.mjs`, after `npm run build` and `npm --prefix bench install`).
//
// The semaphore scenario's setup (16 processes, one semaphore of limit 4 on 5 local
// nodes, 1 ms holds; `--processes=`, `--limit=`), one library at a time, in a new
// random order in each of `--rounds` rounds: every process takes permits in a loop for
// `--warmup` seconds (so that the measured window runs compiled code), then for
// `--seconds` more, measured. Per permit: the processes' CPU (process.cpuUsage, all of
// them together; and apart, their threads other than the main one, where V8 compiles and
// marks: high while it is still compiling), the 5 servers' CPU (INFO cpu) and the
// commands the servers ran (INFO commandstats, Lua's inner calls included; `--top=N`
// shows the N most run), the processes' write and read system calls, with permits/s and
// attempts per permit; and the waits (each acquire call's duration).
// On this 2-core machine the processes and the servers share the cores, so throughput
// is about 2 cores over the CPU per permit: this says where that CPU goes.
import { fork } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { startNodes } from '../scripts/redis-spawner.mjs';
import { adapters } from './adapters/index.mjs';
import { startProfile, writeProfile } from './cpu-profile.mjs';
import { median, option, shuffle } from './report.mjs';

const LIBS_ARG = process.argv.find((a) => a.startsWith('--libs='))?.slice(7);
// --libs=a,b: only those rows (a profile of one library's workers, say).
const LIBS = LIBS_ARG
  ? LIBS_ARG.split(',')
  : [
      'nest-redlock semaphore',
      'nest-redlock semaphore (fencing and fair waiting off)',
      'raw (fair semaphore hand-off)',
      'raw (fenced fair semaphore)',
      'redis-semaphore RedlockSemaphore',
    ];
// --baseline=<copy of an older dist/esm>: its semaphore (defaults) too, for a before/after in one run.
const BASELINE = process.argv.find((a) => a.startsWith('--baseline='))?.slice(11);
const BASELINE_ROW = 'nest-redlock semaphore (baseline)';
if (BASELINE) LIBS.push(BASELINE_ROW);
const TTL = 30_000;
// --profile: the first process of each row runs its measured window (not its warm-up)
// under the V8 CPU profiler (see cpu-profile.mjs).
const PROFILE = process.argv.includes('--profile');

/** The sum of field `k` over `rs` (the loops of a process, the processes of a round). */
const sum = (rs, k) => rs.reduce((total, r) => total + r[k], 0);

if (process.argv[2] === 'worker') {
  const { lib: name, urls, permits, profile, callers } = JSON.parse(process.argv[3]);
  const lib = await adapters[name].create(urls, { wait: true, permits });
  await lib.ready();
  process.send({ type: 'ready' });
  const { warmUntil, endAt } = await new Promise((resolve) => process.once('message', resolve));
  const loop = async (until) => {
    let permitsTaken = 0;
    let attempts = 0;
    const waits = []; // [ms, attempts]
    while (Date.now() < until) {
      const asked = performance.now();
      const permit = await lib.acquire('permit-cpu', TTL);
      waits.push([performance.now() - asked, lib.attempts?.(permit)]);
      attempts += lib.attempts?.(permit) ?? 0;
      await sleep(1);
      await lib.release(permit);
      permitsTaken++;
    }
    return { permits: permitsTaken, attempts, waits };
  };
  // --callers: that many loops at once in this process, over its one client.
  const loops = async (until) => {
    const each = await Promise.all(Array.from({ length: callers }, () => loop(until)));
    return { permits: sum(each, 'permits'), attempts: sum(each, 'attempts'), waits: each.flatMap((r) => r.waits) };
  };
  await loops(warmUntil);
  // The process's write and read system calls (Linux), as sockets' writes and reads.
  const io = () =>
    Object.fromEntries([...readFileSync('/proc/self/io', 'utf8').matchAll(/(\w+): (\d+)/g)].map(([, k, v]) => [k, Number(v)]));
  // CPU µs of this process's threads other than the main one (Linux: V8's compiler and GC
  // helpers, libuv's pool), from each thread's utime + stime in clock ticks of 10 ms.
  const otherThreads = () => {
    let ticks = 0;
    for (const tid of readdirSync('/proc/self/task')) {
      if (tid === String(process.pid)) continue;
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(fields[11]) + Number(fields[12]);
    }
    return ticks * 10_000;
  };
  const session = profile ? await startProfile(200) : undefined;
  const other0 = otherThreads();
  const io0 = io();
  const cpu = process.cpuUsage();
  const measured = await loops(endAt);
  const used = process.cpuUsage(cpu);
  const io1 = io();
  const other = otherThreads() - other0;
  if (session) await writeProfile(session, `permit-${name}`);
  // Sent before the exit below: a large message (every wait) still being written may be lost with the process.
  await new Promise((sent) =>
    process.send(
      {
        type: 'result',
        ...measured,
        cpu: used.user + used.system,
        other,
        syscw: io1.syscw - io0.syscw,
        syscr: io1.syscr - io0.syscr,
        reportsAttempts: typeof lib.attempts === 'function',
      },
      sent,
    ),
  );
  await lib.close();
  process.exit(0);
}

const PROCESSES = Number(option('processes', 16));
// --callers=N: N callers in each process (one client each process), for the clients' cost
// with fewer processes to warm up: `--processes=1 --callers=16` is the scenario's 16 callers
// in one process.
const CALLERS = Number(option('callers', 1));
const LIMIT = Number(option('limit', 4));
const ROUNDS = Number(option('rounds', 2));
const WARMUP = Number(option('warmup', 3)) * 1000;
const SECONDS = Number(option('seconds', 6));
// --top=N: how many of the most run commands to show per row.
const TOP = Number(option('top', 4));

const fleet = await startNodes(5);
const { default: Redis } = await import('ioredis');
const admins = fleet.urls.map((url) => new Redis(url));
/** Each server's CPU µs, and its commands run by name, summed over the 5. */
const serverState = async () => {
  const infos = await Promise.all(admins.map((c) => c.info('all')));
  let cpu = 0;
  const commands = {};
  for (const info of infos) {
    cpu += (Number(/used_cpu_sys:([\d.]+)/.exec(info)[1]) + Number(/used_cpu_user:([\d.]+)/.exec(info)[1])) * 1e6;
    for (const [, name, calls] of info.matchAll(/cmdstat_(\w+):calls=(\d+)/g)) commands[name] = (commands[name] ?? 0) + Number(calls);
  }
  return { cpu, commands };
};

/** Node options for every worker (BENCH_WORKER_ARGS, as in workers.mjs: `--cpu-prof` for a profile per worker). */
const execArgv = process.env.BENCH_WORKER_ARGS?.split(' ') ?? [];

async function round(lib) {
  const workers = Array.from({ length: PROCESSES }, (_, i) =>
    lib === BASELINE_ROW
      ? fork(
          fileURLToPath(import.meta.url),
          [
            'worker',
            JSON.stringify({
              lib: 'nest-redlock semaphore',
              urls: fleet.urls,
              permits: LIMIT,
              profile: PROFILE && i === 0,
              callers: CALLERS,
            }),
          ],
          {
            env: { ...process.env, BENCH_NEST_REDLOCK: pathToFileURL(resolve(BASELINE, 'core/index.js')).href },
            execArgv,
          },
        )
      : fork(
          fileURLToPath(import.meta.url),
          ['worker', JSON.stringify({ lib, urls: fleet.urls, permits: LIMIT, profile: PROFILE && i === 0, callers: CALLERS })],
          {
            execArgv,
          },
        ),
  );
  // A worker that exits before its message says so, with its row and exit code (a bare code hid which and why).
  const next = (w, i) =>
    new Promise((resolve, reject) => {
      const exited = (code, signal) =>
        reject(new Error(`${lib}: worker ${i} exited (code ${code}${signal ? `, signal ${signal}` : ''}) before sending its result`));
      w.once('exit', exited);
      w.once('message', (message) => {
        w.off('exit', exited);
        resolve(message);
      });
    });
  await Promise.all(workers.map(next));
  const warmUntil = Date.now() + 100 + WARMUP;
  const endAt = warmUntil + SECONDS * 1000;
  const results = workers.map(next);
  workers.forEach((w) => w.send({ warmUntil, endAt }));
  await sleep(warmUntil - Date.now());
  const before = await serverState();
  await sleep(endAt - Date.now());
  const after = await serverState();
  const rs = await Promise.all(results);
  const taken = sum(rs, 'permits');
  const waits = rs.flatMap((r) => r.waits).sort((a, b) => a[0] - b[0]);
  const at = (f) => waits[Math.floor(f * (waits.length - 1))]?.[0];
  const long = waits.filter(([ms]) => ms >= 40);
  const commands = Object.fromEntries(
    Object.entries(after.commands)
      .filter(([name]) => name !== 'info')
      .map(([name, calls]) => [name, (calls - (before.commands[name] ?? 0)) / taken]),
  );
  return {
    perSecond: taken / SECONDS,
    attempts: rs[0].reportsAttempts ? sum(rs, 'attempts') / taken : undefined,
    clientCpu: sum(rs, 'cpu') / taken,
    otherCpu: sum(rs, 'other') / taken,
    syscw: sum(rs, 'syscw') / taken,
    syscr: sum(rs, 'syscr') / taken,
    serverCpu: (after.cpu - before.cpu) / taken,
    waits: {
      p50: at(0.5),
      p99: at(0.99),
      longest: at(1),
      long: long.length,
      longTwoAttempts: long.filter(([, a]) => a !== undefined && a <= 2).length,
    },
    commands,
  };
}

try {
  const rounds = Object.fromEntries(LIBS.map((l) => [l, []]));
  for (let r = 0; r < ROUNDS; r++) for (const lib of shuffle(LIBS)) rounds[lib].push(await round(lib));
  console.log(
    `${PROCESSES} processes${CALLERS > 1 ? ` of ${CALLERS} callers` : ''}, limit ${LIMIT}, 1 ms holds, 5 nodes; ${ROUNDS} round(s) x ${SECONDS} s after ${WARMUP / 1000} s of warm-up, medians\n`,
  );
  console.log(
    '| library | permits/s | attempts / permit | client CPU µs / permit (other threads) | client writes / reads per permit | servers CPU µs / permit | scripts run / permit (5 servers) | most run commands / permit |',
  );
  console.log('|---|---|---|---|---|---|---|---|');
  for (const lib of LIBS) {
    const rs = rounds[lib];
    const m = (f) => median(rs.map(f));
    const mid = [...rs].sort((a, b) => a.perSecond - b.perSecond)[Math.floor((rs.length - 1) / 2)];
    const top = Object.entries(mid.commands)
      .sort((a, b) => b[1] - a[1])
      .slice(0, TOP)
      .map(([name, n]) => `${name} ${n.toFixed(1)}`)
      .join(', ');
    const scripts = ['evalsha', 'eval'].reduce((s, name) => s + (mid.commands[name] ?? 0), 0);
    console.log(
      `| ${lib} | ${m((r) => r.perSecond).toFixed(0)} | ${rs[0].attempts === undefined ? '-' : m((r) => r.attempts).toFixed(2)} | ${m((r) => r.clientCpu).toFixed(0)} (${m((r) => r.otherCpu).toFixed(0)}) | ${m((r) => r.syscw).toFixed(1)} / ${m((r) => r.syscr).toFixed(1)} | ${m((r) => r.serverCpu).toFixed(0)} | ${scripts.toFixed(1)} | ${top} |`,
    );
  }
  console.log('\n| library | wait p50 ms | p99 | longest | waits >= 40 ms | of which in <= 2 attempts |');
  console.log('|---|---|---|---|---|---|');
  for (const lib of LIBS) {
    const rs = rounds[lib];
    const m = (f) => median(rs.map(f)).toFixed(0);
    const reports = rs[0].attempts !== undefined;
    console.log(
      `| ${lib} | ${m((r) => r.waits.p50)} | ${m((r) => r.waits.p99)} | ${m((r) => r.waits.longest)} | ${m((r) => r.waits.long)} | ${reports ? m((r) => r.waits.longTwoAttempts) : '-'} |`,
    );
  }
  console.log(
    "\nclient CPU: all threads of the processes (process.cpuUsage); in brackets, their threads other than the main one (/proc/self/task: V8's compiler and GC helpers), which fall as V8 finishes compiling; client writes / reads: the processes' write and read system calls (/proc/self/io); scripts run: EVALSHA and EVAL calls over the 5 servers; most run commands: over the 5 servers, those the scripts call included (INFO commandstats); attempts: where the library reports them; waits: each acquire call, medians over rounds.",
  );
} finally {
  admins.forEach((c) => c.disconnect());
  await fleet.stop();
}
