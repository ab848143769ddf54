// One benchmark process: runs one scenario with one library's adapter and
// prints its result as JSON on stdout.
import { adapters } from './adapters/index.mjs';

const { adapter, urls, scenario, params } = JSON.parse(process.argv[2]);
const now = () => performance.timeOrigin + performance.now();
/** The operation, or a 'deadline' error after `ms`; neither side is left unhandled. */
function withDeadline(promise, ms) {
  let timer;
  const deadline = new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('deadline')), ms)));
  promise.catch(() => undefined);
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}
// A library that leaves a rejection unhandled while a node is down must not end the run.
process.on('unhandledRejection', () => undefined);
const percentile = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))];
};

const lib = await adapters[adapter](urls, { wait: scenario === 'contend' });
await lib.ready();
const tag = `${process.pid}:${Math.random().toString(36).slice(2, 8)}`;
const cycle = async (key) => {
  const handle = await withDeadline(lib.acquire(key, 10_000), params.deadline ?? 5000);
  await withDeadline(lib.release(handle), params.deadline ?? 5000);
};
let result;

if (scenario === 'latency') {
  for (let i = 0; i < Math.min(200, params.cycles); i++) await cycle(`w:${tag}:${i}`); // warm-up
  const samples = [];
  let timeouts = 0;
  for (let i = 0; i < params.cycles && timeouts < 3; i++) {
    const t = performance.now();
    try {
      await cycle(`l:${tag}:${i % 64}`);
      samples.push((performance.now() - t) * 1000);
    } catch {
      timeouts++;
    }
  }
  result = timeouts >= 3 ? { timeout: true } : { p50: percentile(samples, 0.5), p99: percentile(samples, 0.99), n: samples.length };
} else if (scenario === 'throughput') {
  for (let i = 0; i < 200; i++) await cycle(`w:${tag}:${i}`);
  let done = 0;
  let failed = 0;
  const end = performance.now() + params.ms;
  await Promise.all(
    Array.from({ length: params.concurrency }, async (_, c) => {
      for (let i = 0; performance.now() < end; i++) {
        try {
          await cycle(`t:${tag}:${c}:${i % 16}`);
          done++;
        } catch {
          failed++;
        }
      }
    }),
  );
  result = { perSecond: (done / params.ms) * 1000, failed };
} else if (scenario === 'contend') {
  // Start together with the other processes, then take the one key in a loop.
  while (now() < params.startAt) await new Promise((r) => setTimeout(r, 1));
  const events = [];
  while (now() < params.startAt + params.ms) {
    const asked = now();
    let handle;
    try {
      handle = await withDeadline(lib.acquire('contended', 10_000), 15_000);
    } catch {
      continue;
    }
    const got = now();
    await new Promise((r) => setTimeout(r, params.hold));
    const released = now();
    await lib.release(handle).catch(() => undefined);
    events.push([asked, got, released]);
  }
  result = { events };
} else if (scenario === 'memory') {
  for (let i = 0; i < 1000; i++) await cycle(`m:${tag}:${i % 64}`);
  global.gc();
  const before = process.memoryUsage();
  for (let i = 0; i < params.cycles; i++) await cycle(`m:${tag}:${i % 64}`);
  global.gc();
  const after = process.memoryUsage();
  result = { heapDelta: after.heapUsed - before.heapUsed, heapUsed: after.heapUsed, rss: after.rss };
}

await lib.close();
process.stdout.write(JSON.stringify(result));
process.exit(0);
