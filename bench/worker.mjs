// One benchmark process: one library's adapter, one scenario. Forked by run.mjs
// with an IPC channel: connects and warms up, sends { type: 'ready' }, waits for
// { type: 'go' } (run.mjs may kill or pause nodes in between), measures, and sends
// { type: 'result', result }. Exits when run.mjs goes away.
import { setImmediate as yieldToIo, setTimeout as sleep } from 'node:timers/promises';
import { adapters } from './adapters/index.mjs';
import { percentile } from './report.mjs';

const { adapter, urls, scenario, params } = JSON.parse(process.argv[2]);
process.on('disconnect', () => process.exit(2));
// A library that leaves a rejection unhandled while a node is down must not end the run.
process.on('unhandledRejection', () => undefined);

const TTL = 10_000;
// The host's monotonic clock (ms): one clock for every process, so hand-offs between
// processes are measured right. `performance.timeOrigin` can be off by milliseconds
// in one process (seen in the fault suite), more than a hand-off takes.
const now = () => Number(process.hrtime.bigint()) / 1e6;
const message = (error) => (error instanceof Error ? `${error.name}: ${error.message}` : String(error)).slice(0, 200);

/** The operation, or a 'deadline' error after `ms`; neither side is left unhandled. */
function withDeadline(promise, ms) {
  let timer;
  const deadline = new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('deadline')), ms)));
  promise.catch(() => undefined);
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}
// `permits`: a semaphore adapter's limit (the semaphore scenario's; the adapter's own default otherwise).
const lib = await adapters[adapter].create(urls, { wait: scenario === 'contend', permits: params.permits });
await withDeadline(lib.ready(), 10_000);
const tag = `${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
const deadline = params.deadline ?? 5000;

// Callers yield to I/O after a failed cycle before the next one. A library whose
// failure path involves no I/O (nest-redlock, when every node is marked stalled after
// a round timed out) would otherwise spin in microtasks: the replies that end the
// stall are never read, and every later cycle fails (seen with 64 callers under load).
async function cycle(key) {
  const handle = await withDeadline(lib.acquire(key, TTL), deadline);
  await withDeadline(lib.release(handle), deadline);
}
/**
 * Cycles over `concurrency` callers, each on its own keys (`keys` of them per
 * caller), until `total` succeeded or `3 * total` were tried.
 */
async function cycles(total, concurrency, prefix, keys = 16) {
  let started = 0;
  let done = 0;
  let failed = 0;
  let firstError;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, c) => {
      for (let i = 0; done + (started - done - failed) < total && started < 3 * total; i++) {
        started++;
        await cycle(`${prefix}:${tag}:${c}:${i % keys}`).then(
          () => done++,
          async (e) => {
            failed++;
            firstError ??= message(e);
            await yieldToIo(); // see `cycle`
          },
        );
      }
    }),
  );
  return { done, failed, firstError };
}
/** Tells run.mjs this process is warm; resolves with run.mjs's go message. */
function ready() {
  return new Promise((resolve) => {
    process.on('message', (m) => m.type === 'go' && resolve(m));
    process.send({ type: 'ready' });
  });
}

let result;
if (scenario === 'probe') {
  await cycle(`p:${tag}`);
  result = { ok: true };
} else if (scenario === 'latency') {
  // Measured cycles reuse 64 keys that the warm-up locked already (a resource locked
  // before, the usual case); with `newKeys`, every other cycle locks a resource never
  // locked before. After a timed-out cycle (whose acquire may still land) the keys change.
  let generation = 0;
  const key = (i) => `l:${tag}:${generation}:${i % 64}`;
  for (let i = 0; i < (params.warmup ?? 200); i++) await cycle(key(i)).catch(() => undefined);
  // With `baseline`, the same cycles first on healthy nodes, in this same process: the
  // degraded p50 is compared with it (a healthy p50 measured at another time of the run
  // would carry the machine's drift).
  let baselineP50;
  if (params.baseline) {
    const healthy = [];
    for (let i = 0; i < params.cycles; i++) {
      const t = performance.now();
      await cycle(key(i)).then(
        () => healthy.push((performance.now() - t) * 1000),
        () => undefined,
      );
    }
    baselineP50 = percentile(
      healthy.sort((a, b) => a - b),
      0.5,
    );
  }
  await ready();
  const reused = [];
  const fresh = [];
  let timeouts = 0;
  let failed = 0;
  let firstError;
  const timed = async (k, into) => {
    const t = performance.now();
    try {
      await cycle(k);
      into.push((performance.now() - t) * 1000);
    } catch (e) {
      if (e.message === 'deadline') {
        timeouts++;
        generation++;
      } else failed++;
      firstError ??= message(e);
      await yieldToIo(); // see `cycle`
    }
  };
  for (let i = 0; i < params.cycles && timeouts < 3; i++) {
    await timed(key(i), reused);
    if (params.newKeys && timeouts < 3) await timed(`n:${tag}:${i}`, fresh);
  }
  reused.sort((a, b) => a - b);
  fresh.sort((a, b) => a - b);
  result =
    timeouts >= 3 || reused.length === 0
      ? { timeout: timeouts >= 3, error: firstError, ok: reused.length, failed }
      : {
          p50: percentile(reused, 0.5),
          baselineP50,
          p99: percentile(reused, 0.99),
          n: reused.length,
          ...(fresh.length ? { newP50: percentile(fresh, 0.5), newP99: percentile(fresh, 0.99) } : {}),
          failed,
          timeouts,
          firstError,
        };
} else if (scenario === 'throughput') {
  /** `concurrency` callers cycling on their own 4 keys each for `ms`. */
  const run = async (ms) => {
    let done = 0;
    let failed = 0;
    let firstError;
    const end = performance.now() + ms;
    await Promise.all(
      Array.from({ length: params.concurrency }, async (_, c) => {
        for (let i = 0; performance.now() < end; i++) {
          try {
            await cycle(`t:${tag}:${c}:${i % 4}`);
            done++;
          } catch (e) {
            failed++;
            firstError ??= message(e);
            await yieldToIo(); // see `cycle`
          }
        }
      }),
    );
    return { done, failed, firstError };
  };
  await cycles(512, params.concurrency, 't', 4); // locks every key once: see 'latency'
  // Steady state, not start-up: as long again as the measurement, so that every
  // library's hot path is compiled (V8 tiers functions up after thousands of calls;
  // 512 cycles were too few, and the first part of the window ran unoptimized code).
  await run(params.warmMs ?? params.ms);
  await ready();
  const cpu = process.cpuUsage();
  const { done, failed, firstError } = await run(params.ms);
  const used = process.cpuUsage(cpu);
  result = { perSecond: (done / params.ms) * 1000, done, cpuPerCycle: (used.user + used.system) / done, failed, firstError };
} else if (scenario === 'contend') {
  await cycles(20, 1, 'w');
  if (params.first) await cycle(params.key); // its fencing counter exists before the start, for whoever uses one
  // Contending from `warm` ms before startAt; only the calls asked from startAt on are measured
  // (and calls still waiting at the deadline, whenever asked).
  const { startAt, ms, warm = 0 } = await ready();
  const end = startAt + ms;
  const events = []; // [asked, got, released, attempts, release call returned]
  const gaveUp = []; // [asked, at, error]
  let releaseErrors = 0;
  // After its last measured call a process goes on taking the lock, unmeasured, until
  // every process has finished measuring (run.mjs then sends 'stop'): the others' last
  // waits see the same load as the rest of the window. With the load gone, this
  // machine's idle cores wake late and a 1 ms hold took up to 9 ms.
  let onStop;
  const stop = new Promise((resolve) => (onStop = resolve));
  process.on('message', (m) => m.type === 'stop' && onStop());
  const drained = () => process.send({ type: 'drained' });
  await sleep(Math.max(0, startAt - warm - now()));
  while (now() < end) {
    const asked = now();
    let handle;
    try {
      // Waits past the window are measured up to `grace` ms after it.
      handle = await withDeadline(lib.acquire(params.key, TTL), Math.max(1, end + params.grace - asked));
    } catch (e) {
      // A call asked in the warm-up and still waiting after the window counts: a process starved from before the window.
      if (asked >= startAt || e.message === 'deadline')
        gaveUp.push([asked, now(), e.message === 'deadline' ? 'still waiting' : message(e)]);
      if (e.message === 'deadline') break; // the acquire goes on in the background: stop here
      continue;
    }
    const got = now();
    await sleep(params.hold);
    const released = now();
    await withDeadline(lib.release(handle), 5000).catch(() => releaseErrors++);
    if (asked >= startAt) events.push([asked, got, released, lib.attempts?.(handle), now()]);
  }
  drained();
  for (let stopped = false; !stopped && gaveUp.at(-1)?.[2] !== 'still waiting';) {
    const cycle = lib.acquire(params.key, TTL).then(
      async (handle) => {
        await sleep(params.hold);
        await lib.release(handle).catch(() => undefined);
      },
      () => undefined,
    );
    stopped = (await Promise.race([cycle, stop.then(() => 'stop')])) === 'stop';
  }
  await stop;
  result = { events, gaveUp, releaseErrors };
} else if (scenario === 'memory') {
  await cycles(1000, params.concurrency, 'm', 4);
  const settle = async () => {
    for (let i = 0; i < 3; i++) {
      global.gc();
      await sleep(50);
    }
  };
  await settle();
  const before = process.memoryUsage();
  const t = performance.now();
  const { done, failed, firstError } = await cycles(params.cycles, params.concurrency, 'm', 4);
  const seconds = (performance.now() - t) / 1000;
  await settle();
  const after = process.memoryUsage();
  result = {
    heapDelta: after.heapUsed - before.heapUsed,
    heapUsed: after.heapUsed,
    rss: after.rss,
    rssDelta: after.rss - before.rss,
    seconds,
    done,
    failed,
    firstError,
  };
}

process.send({ type: 'result', result }, async () => {
  await withDeadline(lib.close(), 2000).catch(() => undefined);
  process.exit(0);
});
