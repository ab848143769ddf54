// Uncontended cycle time against N local redis-server nodes, interleaved with a
// raw ioredis round written by hand, in one process and one run.
// Usage: npm run build && node bench/cycle.mjs [--nodes 5] [--rounds 20] [--per-round 200]
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { Redis } from 'ioredis';
import { Redlock } from '../dist/esm/index.js';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const N = arg('nodes', 5);
const ROUNDS = arg('rounds', 20);
const PER_ROUND = arg('per-round', 200);

const freePort = () =>
  new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

async function startNode() {
  const port = await freePort();
  // The shell wrapper kills redis when our stdin pipe closes (also if we are killed).
  const child = spawn(
    'sh',
    ['-c', `${process.env.REDLOCK_TEST_SERVER ?? 'redis-server'} --port ${port} --bind 127.0.0.1 --save "" --appendonly no >/dev/null & pid=$!; cat >/dev/null; kill -9 $pid; wait $pid`],
    { stdio: ['pipe', 'ignore', 'ignore'] },
  );
  const probe = new Redis({ port, lazyConnect: true, retryStrategy: () => 10 });
  await probe.connect();
  await probe.ping();
  probe.disconnect();
  return { url: `redis://127.0.0.1:${port}`, stop: () => child.stdin.end() };
}

const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;

const nodes = await Promise.all(Array.from({ length: N }, startNode));
const raw = nodes.map((n) => new Redis(n.url));
const releaseSha = await Promise.all(raw.map((r) => r.script('LOAD', RELEASE)));
const quorum = Math.floor(N / 2) + 1;
const redlock = new Redlock({ nodes: nodes.map((n) => n.url), retryCount: 0 });
const plain = new Redlock({ nodes: nodes.map((n) => n.url), retryCount: 0, fencing: false, prefix: 'plain:' });
await redlock.ready();
await plain.ready();

/** Resolves when `count` of the promises fulfilled with a truthy value (the quorum). */
function atQuorum(promises) {
  return new Promise((resolve) => {
    let yes = 0;
    for (const p of promises) p.then((v) => ++yes === quorum && resolve());
  });
}

const scenarios = {
  rawSet: async (i) => {
    const v = randomBytes(20).toString('base64url');
    await atQuorum(raw.map((r) => r.set(`raw:${i}`, v, 'PX', 10_000, 'NX')));
  },
  rawCycle: async (i) => {
    const v = randomBytes(20).toString('base64url');
    await atQuorum(raw.map((r) => r.set(`rawc:${i}`, v, 'PX', 10_000, 'NX')));
    await Promise.all(raw.map((r, j) => r.evalsha(releaseSha[j], 1, `rawc:${i}`, v)));
  },
  redlockFreshKeys: async (i) => {
    const lock = await redlock.acquire(`k:${i}`, 10_000);
    await lock.release();
  },
  redlockReusedKeys: async (i) => {
    // The usual case: a resource locked before, whose counters agree on every node.
    const lock = await redlock.acquire(`reused:${i % 16}`, 10_000);
    await lock.release();
  },
  redlockNoFencing: async (i) => {
    const lock = await plain.acquire(`k:${i}`, 10_000);
    await lock.release();
  },
};

const samples = Object.fromEntries(Object.keys(scenarios).map((k) => [k, []]));
let seq = 0;
for (let round = 0; round < ROUNDS + 1; round++) {
  for (const [name, fn] of Object.entries(scenarios)) {
    for (let i = 0; i < PER_ROUND; i++) {
      const t0 = performance.now();
      await fn(seq++);
      if (round > 0) samples[name].push((performance.now() - t0) * 1000); // round 0 warms up
    }
  }
}

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const base = pct(samples.rawCycle, 50);
console.log(`${N} local redis-server nodes, ${ROUNDS} interleaved rounds x ${PER_ROUND} calls, ${new Date().toISOString()}`);
console.log('scenario             p50 µs   p99 µs   p50 / raw set+release');
for (const [name, xs] of Object.entries(samples)) {
  console.log(
    `${name.padEnd(20)} ${pct(xs, 50).toFixed(0).padStart(6)}   ${pct(xs, 99).toFixed(0).padStart(6)}   ${(pct(xs, 50) / base).toFixed(2)}x`,
  );
}

await redlock.close();
await plain.close();
raw.forEach((r) => r.disconnect());
nodes.forEach((n) => n.stop());
