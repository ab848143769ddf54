// npm run bench [-- --quick]: this library against node-redlock (v5, v4),
// @sesamecare-oss/redlock and redis-semaphore's RedlockMutex, each library in
// its own process, interleaved over rounds, on the same local redis-server nodes.
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { cpus } from 'node:os';
import { adapters } from './adapters/index.mjs';

const QUICK = process.argv.includes('--quick');
const R = QUICK ? 2 : 5; // interleaved rounds
const CYCLES = QUICK ? 500 : 2000;
// BENCH_LIBS=a,b runs only those (the raw round always runs).
const LIBS = Object.keys(adapters).filter((l) => !process.env.BENCH_LIBS || l === 'raw' || process.env.BENCH_LIBS.split(',').includes(l));
const PEERS = LIBS.filter((l) => l !== 'nest-redlock' && l !== 'raw');
const results = { date: new Date().toISOString(), quick: QUICK, machine: machine(), scenarios: {} };

const freePort = () =>
  new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

/** A redis-server whose life is tied to this process (the wrapper kills it when our pipe closes). */
async function startNode() {
  const port = await freePort();
  const wrapper = spawn(
    'sh',
    ['-c', `redis-server --port ${port} --bind 127.0.0.1 --save "" --appendonly no >/dev/null & echo $!; cat >/dev/null; kill -9 $! 2>/dev/null; wait`],
    { stdio: ['pipe', 'pipe', 'ignore'] },
  );
  const pid = Number(await new Promise((resolve) => wrapper.stdout.once('data', (d) => resolve(String(d).trim()))));
  for (let i = 0; !(await ping(port)); i++) {
    if (i > 300) throw new Error(`redis-server on port ${port} did not start`);
    await new Promise((r) => setTimeout(r, 10));
  }
  return { url: `redis://127.0.0.1:${port}`, pid, stop: () => wrapper.stdin.end() };
}

/** One PING over a raw socket: true on +PONG within 200 ms. */
function ping(port) {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const done = (ok) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(ok);
    };
    const timer = setTimeout(() => done(false), 200);
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (d) => done(String(d).startsWith('+PONG')));
    socket.on('error', () => done(false));
  });
}

function worker(adapter, urls, scenario, params) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--expose-gc', new URL('./worker.mjs', import.meta.url).pathname, JSON.stringify({ adapter, urls, scenario, params })], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    const kill = setTimeout(() => child.kill('SIGKILL'), params.limit ?? 120_000);
    child.on('exit', () => {
      clearTimeout(kill);
      try {
        resolve(JSON.parse(out));
      } catch {
        resolve({ error: (err || out || 'no output').split('\n').slice(0, 3).join(' ') });
      }
    });
  });
}

const median = (xs) => {
  const s = xs.filter((x) => typeof x === 'number').sort((a, b) => a - b);
  return s.length ? s[Math.floor(s.length / 2)] : undefined;
};
const shuffle = (xs) => xs.map((x) => [Math.random(), x]).sort((a, b) => a[0] - b[0]).map((x) => x[1]);
const fmt = (x, digits = 0) => (x === undefined ? '-' : x.toFixed(digits));

function table(title, head, rows) {
  const all = [head, ...rows].map((r) => r.map(String));
  const widths = head.map((_, i) => Math.max(...all.map((r) => r[i].length)));
  const line = (r) => `| ${r.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  console.log(`\n${title}\n${line(all[0])}\n${line(widths.map((w) => '-'.repeat(w)))}\n${all.slice(1).map(line).join('\n')}`);
}

/** Latency of every library, interleaved over rounds: median p50 and p99 in µs. */
async function latency(name, urls, libs, params, rounds = R) {
  const samples = Object.fromEntries(libs.map((l) => [l, []]));
  for (let r = 0; r < rounds; r++) for (const lib of shuffle(libs)) samples[lib].push(await worker(lib, urls, 'latency', params));
  const out = {};
  for (const lib of libs) {
    const ok = samples[lib].filter((s) => s.p50 !== undefined);
    out[lib] = ok.length ? { p50: median(ok.map((s) => s.p50)), p99: median(ok.map((s) => s.p99)) } : { failed: samples[lib][0].timeout ? 'timeout' : samples[lib][0].error };
  }
  results.scenarios[name] = out;
  return out;
}

function latencyTable(title, out) {
  const raw = out.raw?.p50;
  table(title, ['library', 'p50 µs', 'p99 µs', 'p50 / raw'], Object.entries(out).map(([lib, r]) =>
    r.failed ? [lib, r.failed, '', ''] : [lib, fmt(r.p50), fmt(r.p99), raw ? `${(r.p50 / raw).toFixed(2)}x` : '-']));
}

const nodes = await Promise.all(Array.from({ length: 7 }, startNode));
const urls5 = nodes.slice(0, 5).map((n) => n.url);
try {
  console.log(`nest-redlock benchmark ${QUICK ? '(quick) ' : ''}${results.date}\n${results.machine}`);

  latencyTable('Uncontended acquire+release, 5 nodes', await latency('uncontended', urls5, LIBS, { cycles: CYCLES }));

  const tp = Object.fromEntries(LIBS.map((l) => [l, []]));
  const tpErrors = {};
  for (let r = 0; r < R; r++) {
    for (const lib of shuffle(LIBS)) {
      const res = await worker(lib, urls5, 'throughput', { concurrency: 64, ms: QUICK ? 1000 : 3000 });
      if (res.perSecond === undefined) tpErrors[lib] = res.error ?? 'failed';
      tp[lib].push(res.perSecond);
    }
  }
  for (const [lib, error] of Object.entries(tpErrors)) console.log(`  ${lib}: ${error}`);
  const tpMed = Object.fromEntries(LIBS.map((l) => [l, median(tp[l])]));
  const bestPeer = Math.max(...PEERS.map((p) => tpMed[p] ?? 0));
  results.scenarios.throughput64 = tpMed;
  table('64 concurrent callers on distinct keys, 5 nodes', ['library', 'cycles/s', 'vs best peer'], LIBS.map((l) => [l, fmt(tpMed[l]), bestPeer ? `${((tpMed[l] ?? 0) / bestPeer).toFixed(2)}x` : '-']));

  // Single-key contention: 8 processes, 1 ms critical sections.
  const contention = {};
  for (const lib of shuffle(LIBS.filter((l) => l !== 'raw'))) {
    const startAt = performance.timeOrigin + performance.now() + 1500;
    const ms = QUICK ? 2000 : 3000;
    const runs = await Promise.all(Array.from({ length: 8 }, () => worker(lib, urls5, 'contend', { startAt, ms, hold: 1, limit: ms + 30_000 })));
    const per = runs.map((r) => r.events ?? []);
    const all = per.flatMap((events, p) => events.map(([asked, got, released]) => ({ p, asked, got, released }))).sort((a, b) => a.got - b.got);
    const counts = per.map((e) => e.length);
    const handoffs = [];
    for (let i = 1; i < all.length; i++) if (all[i].p !== all[i - 1].p) handoffs.push(all[i].got - all[i - 1].released);
    contention[lib] = {
      perSecond: (all.length / ms) * 1000,
      fairness: Math.min(...counts) / Math.max(1, Math.max(...counts)),
      longestWait: Math.max(0, ...all.map((e) => e.got - e.asked)),
      handoffP50: median(handoffs),
      sameProcessAgain: all.length > 1 ? 1 - handoffs.length / (all.length - 1) : 0,
      counts,
    };
  }
  results.scenarios.contention = contention;
  table('8 processes, one key, 1 ms holds', ['library', 'acq/s', 'worst/best', 'longest wait ms', 'hand-off p50 ms', 'same process again', 'per process'],
    Object.entries(contention).map(([l, c]) => [l, fmt(c.perSecond), c.fairness.toFixed(2), fmt(c.longestWait), fmt(c.handoffP50, 2), `${(c.sameProcessAgain * 100).toFixed(0)}%`, c.counts.join(' ')]));

  execFileSync('kill', ['-9', String(nodes[4].pid)]);
  // Degraded runs: fewer cycles and rounds, each operation bounded; a library that
  // cannot finish 3 operations within its bounds is reported as "timeout".
  const degraded = { cycles: CYCLES / 4, deadline: 2000, limit: 30_000 };
  latencyTable('One of 5 nodes down', await latency('oneDown', urls5, LIBS, degraded, Math.min(R, 3)));
  nodes[4] = await startNode();
  urls5[4] = nodes[4].url;

  for (const i of [3, 4]) execFileSync('kill', ['-STOP', String(nodes[i].pid)]);
  latencyTable('Two of 5 nodes paused (SIGSTOP); each operation bounded by 2 s', await latency('twoPaused', urls5, LIBS, degraded, Math.min(R, 3)));
  for (const i of [3, 4]) execFileSync('kill', ['-CONT', String(nodes[i].pid)]);

  const memory = {};
  for (const lib of LIBS) memory[lib] = await worker(lib, urls5, 'memory', { cycles: QUICK ? 20_000 : 200_000, limit: QUICK ? 60_000 : 180_000 });
  results.scenarios.memory = memory;
  table(`Memory after ${QUICK ? '20k' : '200k'} cycles (after GC)`, ['library', 'heap growth KiB', 'heap used MiB', 'rss MiB'],
    LIBS.map((l) => (memory[l].heapDelta === undefined ? [l, memory[l].error ?? 'failed', '', ''] : [l, fmt(memory[l].heapDelta / 1024), fmt(memory[l].heapUsed / 2 ** 20, 1), fmt(memory[l].rss / 2 ** 20, 1)])));

  const scale = {};
  for (const n of [1, 3, 5, 7]) scale[n] = await latency(`n${n}`, nodes.slice(0, n).map((x) => x.url), ['nest-redlock', 'raw'], { cycles: CYCLES / 2 });
  results.scenarios.nodes = scale;
  table('Uncontended cycle by node count, p50 µs', ['N', 'nest-redlock', 'raw', 'ratio'],
    Object.entries(scale).map(([n, s]) => [n, fmt(s['nest-redlock'].p50), fmt(s.raw.p50), (s['nest-redlock'].p50 / s.raw.p50).toFixed(2)]));
} finally {
  for (const n of nodes) {
    try {
      execFileSync('kill', ['-CONT', String(n.pid)], { stdio: 'ignore' });
    } catch {}
    n.stop();
  }
}
mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
writeFileSync(new URL('./results/latest.json', import.meta.url), `${JSON.stringify(results, null, 2)}\n`);

function machine() {
  const model = readFileSync('/proc/cpuinfo', 'utf8').match(/model name\s*:\s*(.*)/)?.[1] ?? 'unknown cpu';
  const redis = execFileSync('redis-server', ['--version']).toString().match(/v=(\S+)/)?.[1];
  return `${model}, ${cpus().length} cores, Node ${process.version}, redis-server ${redis}`;
}
