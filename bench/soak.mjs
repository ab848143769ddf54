// Soak and scale of nest-redlock alone (`npm run bench:soak` from the root;
// `-- --cycles=200000` for a shorter run). Starts 5 local nodes, then:
//  1. 1 000 000 acquire + release cycles (64 concurrent callers, 256 keys),
//     sampling after every 100k, after a GC: heap used, active handles and
//     timers, listeners on the client's connections, commands waiting on the
//     nodes, locks the client still tracks. Nothing may grow.
//  2. 100 000 locks on distinct resources held at once: heap per held lock;
//     then all released, and the heap back where it was (nothing kept per
//     resource after release).
// Beside the client's numbers, the nodes': keys (DBSIZE) and used_memory (INFO
// memory), the mean over the 5 nodes, at every sample: the 100k resources of
// step 2 leave their fencing counters there for fencingRetention.
// Prints a table and writes results/soak.json. Run with --expose-gc (the npm script does).
import { writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { startNode } from '../scripts/redis-spawner.mjs';
import { nodeMemory } from './node-memory.mjs';

if (typeof global.gc !== 'function') throw new Error('run with node --expose-gc (npm run bench:soak does)');
const arg = (name, fallback) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback);
const CYCLES = arg('cycles', 1_000_000);
const HELD = arg('held', 100_000);
const CONCURRENCY = 64;
const SAMPLE = Math.max(1, Math.floor(CYCLES / 10));

const { Redlock } = await import(new URL('../dist/esm/index.js', import.meta.url).href);
const nodes = await Promise.all(Array.from({ length: 5 }, () => startNode()));
// The soak's own clients, passed in as an application would: the client keeps its
// node list private (it holds their credentials), so this is how listeners are counted.
const { Redis } = await import('ioredis');
const clients = nodes.map((n) => new Redis(n.url, { enableOfflineQueue: false, autoResendUnfulfilledCommands: false }));
const redlock = new Redlock({ nodes: clients, retryCount: 0 });
await redlock.ready();
const urls = nodes.map((n) => n.url);
/** The nodes' keys and used_memory, mean over the nodes. */
async function onNodes() {
  const all = await nodeMemory(urls);
  const mean = (f) => all.reduce((sum, n) => sum + f(n), 0) / all.length;
  return { keys: mean((n) => n.keys), bytes: mean((n) => n.bytes) };
}
const nodesAtStart = await onNodes();

const settle = async () => {
  for (let i = 0; i < 3; i++) {
    global.gc();
    await sleep(20);
  }
};
/** What the process and the client hold right now (internals read for the test only). */
function sample(done) {
  const internals = redlock;
  return {
    cycles: done,
    heapUsed: process.memoryUsage().heapUsed,
    handles: process.getActiveResourcesInfo().length,
    timers: process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length,
    listeners: clients.reduce((sum, c) => sum + c.eventNames().reduce((k, e) => k + c.listenerCount(e), 0), 0),
    pending: clients.reduce((sum, c) => sum + c.commandQueue.length, 0),
    held: internals.locks.size,
  };
}

// 1. Cycles.
const samples = [];
let done = 0;
let failed = 0;
const started = performance.now();
await settle();
samples.push({ ...sample(0), nodes: nodesAtStart });
// In chunks of SAMPLE cycles, so that every sample is taken with all callers idle.
for (let chunk = 0; done < CYCLES; chunk++) {
  const target = Math.min(CYCLES, done + SAMPLE);
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async (_, c) => {
      for (let i = 0; done < target; i++) {
        try {
          const lock = await redlock.acquire(`soak:${c}:${i % 4}`, 10_000);
          await lock.release();
          done++;
        } catch {
          failed++;
        }
      }
    }),
  );
  await settle();
  samples.push({ ...sample(done), nodes: await onNodes() });
  process.stderr.write(`[soak] ${done} cycles, heap ${(samples.at(-1).heapUsed / 2 ** 20).toFixed(1)} MiB\n`);
}
const seconds = (performance.now() - started) / 1000;

// 2. Held locks.
await settle();
const beforeHeld = process.memoryUsage().heapUsed;
const locks = [];
for (let i = 0; i < HELD; i += CONCURRENCY) {
  const batch = Array.from({ length: Math.min(CONCURRENCY, HELD - i) }, (_, k) => redlock.acquire(`held:${i + k}`, 600_000));
  locks.push(...(await Promise.all(batch)));
}
await settle();
const whileHeld = process.memoryUsage().heapUsed;
for (let i = 0; i < locks.length; i += CONCURRENCY) await Promise.all(locks.slice(i, i + CONCURRENCY).map((l) => l.release()));
locks.length = 0;
await settle();
const afterRelease = { ...sample(done), nodes: await onNodes() };

await redlock.close();
for (const c of clients) c.disconnect();
await Promise.all(nodes.map((n) => n.stop()));

const first = samples[1] ?? samples[0];
const last = samples.at(-1);
const result = {
  date: new Date().toISOString(),
  machine: `${cpus()[0]?.model ?? 'unknown'}, ${cpus().length} cores, Node ${process.version}`,
  cycles: done,
  failed,
  seconds,
  samples,
  heldLocks: HELD,
  bytesPerHeldLock: (whileHeld - beforeHeld) / HELD,
  // What the held-and-released resources left on each node (fencing counters), per resource.
  nodeBytesPerResource: (afterRelease.nodes.bytes - last.nodes.bytes) / HELD,
  nodeKeysPerResource: (afterRelease.nodes.keys - last.nodes.keys) / HELD,
  afterRelease,
  growthFromFirstSample: {
    heapKiB: (last.heapUsed - first.heapUsed) / 1024,
    handles: last.handles - first.handles,
    listeners: last.listeners - first.listeners,
    pending: last.pending - first.pending,
  },
};
writeFileSync(new URL('./results/soak.json', import.meta.url), `${JSON.stringify(result, null, 2)}\n`);

const row = (cells) => `| ${cells.join(' | ')} |`;
console.log(
  `\n### Soak: ${done} acquire + release cycles (${CONCURRENCY} concurrent callers, 5 nodes; ${(done / seconds).toFixed(0)} cycles/s, ${failed} failed)\n`,
);
console.log(
  row([
    'cycles',
    'heap used MiB',
    'active handles',
    'timers',
    'connection listeners',
    'commands pending',
    'locks tracked',
    'node keys',
    'node used_memory MiB',
  ]),
);
console.log(row(['---', '---', '---', '---', '---', '---', '---', '---', '---']));
for (const s of [...samples, { ...afterRelease, cycles: `after ${HELD / 1000}k held + released` }]) {
  console.log(
    row([
      s.cycles,
      (s.heapUsed / 2 ** 20).toFixed(1),
      s.handles,
      s.timers,
      s.listeners,
      s.pending,
      s.held,
      s.nodes.keys.toFixed(0),
      (s.nodes.bytes / 2 ** 20).toFixed(1),
    ]),
  );
}
console.log(
  `\nHeap from the first sample to the last: ${result.growthFromFirstSample.heapKiB.toFixed(0)} KiB. ` +
    `${HELD / 1000}k locks held at once: ${result.bytesPerHeldLock.toFixed(0)} bytes of heap per held lock; ` +
    `after releasing them all, heap ${(afterRelease.heapUsed / 2 ** 20).toFixed(1)} MiB and ${afterRelease.held} locks tracked. ` +
    `On each node (mean of 5) they left ${result.nodeKeysPerResource.toFixed(2)} keys and ${result.nodeBytesPerResource.toFixed(0)} bytes ` +
    `of used_memory per resource (fencing counters, kept for fencingRetention). Node keys and memory: mean over the 5 nodes.`,
);
