// Fencing counters' footprint on a node (`npm run bench:fencing-footprint` from the root;
// `-- --resources=200000` for a shorter run). Memory, not timing: valid on a loaded machine.
//
// Starts one local redis-server (stopped by its PID at the end; every node of a
// quorum holds the same keys, so one node shows the cost per node), then locks
// and releases `--resources` distinct resources once each (`order:<n>`, as an
// application locking one order at a time would), with this library's defaults.
// A resource locked and released leaves one key on each node: its fencing
// counter, kept for `fencingRetention`. Prints, per resource and per million
// resources: keys and used_memory (INFO memory) growth, and the dataset part of
// it; then what a node holds in the steady state for a few retentions and rates
// of new resources. Writes results/fencing-footprint.json.
import { writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { startNode } from '../scripts/redis-spawner.mjs';

const arg = (name, fallback) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback);
const RESOURCES = arg('resources', 1_000_000);
const CONCURRENCY = 64;

const { Redlock } = await import(new URL('../dist/esm/core/index.js', import.meta.url).href);
const { DEFAULTS } = await import(new URL('../dist/esm/core/options.js', import.meta.url).href);
const { Redis } = await import('ioredis');

const node = await startNode();
try {
  const probe = new Redis(node.url, { maxRetriesPerRequest: 1 });
  /** Keys, used_memory and used_memory_dataset of the node, once the allocator settled. */
  const measure = async () => {
    await sleep(200);
    const info = await probe.info('memory');
    const field = (name) => Number(new RegExp(`^${name}:(\\d+)`, 'm').exec(info)?.[1]);
    return { keys: await probe.dbsize(), bytes: field('used_memory'), dataset: field('used_memory_dataset') };
  };
  // The defaults (fencing and fair waiting on, the default retention), but a per-node
  // timeout long enough for a loaded machine: this run measures memory, not time.
  const redlock = new Redlock({ nodes: [node.url], nodeTimeout: 5000 });
  await redlock.ready();
  const before = await measure();
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < RESOURCES) {
        const lock = await redlock.acquire(`order:${next++}`, 10_000);
        await lock.release();
      }
      // Every resource was locked and released: a failure ends the run with its error.
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const after = await measure();
  const sample = `${DEFAULTS.prefix}fence:order:${RESOURCES - 1}`;
  const sampleKey = { name: sample, memoryUsage: await probe.call('MEMORY', 'USAGE', sample), pttl: await probe.pttl(sample) };
  await redlock.close();
  probe.disconnect();

  const per = {
    keys: (after.keys - before.keys) / RESOURCES,
    bytes: (after.bytes - before.bytes) / RESOURCES,
    dataset: (after.dataset - before.dataset) / RESOURCES,
  };
  const MiB = 2 ** 20;
  const result = {
    date: new Date().toISOString(),
    resources: RESOURCES,
    seconds,
    defaultRetentionMs: DEFAULTS.fencingRetention,
    before,
    after,
    perResource: per,
    perMillionMiB: { usedMemory: (per.bytes * 1e6) / MiB, dataset: (per.dataset * 1e6) / MiB },
    sampleKey,
  };
  writeFileSync(new URL('./results/fencing-footprint.json', import.meta.url), `${JSON.stringify(result, null, 2)}\n`);

  console.log(`\n### Fencing counters on one node: ${RESOURCES} distinct resources locked once (defaults), ${seconds.toFixed(0)} s\n`);
  console.log(`| | keys | used_memory | used_memory_dataset |`);
  console.log(`|---|---|---|---|`);
  console.log(`| before | ${before.keys} | ${(before.bytes / MiB).toFixed(1)} MiB | ${(before.dataset / MiB).toFixed(1)} MiB |`);
  console.log(`| after | ${after.keys} | ${(after.bytes / MiB).toFixed(1)} MiB | ${(after.dataset / MiB).toFixed(1)} MiB |`);
  console.log(`| per resource | ${per.keys.toFixed(3)} | ${per.bytes.toFixed(0)} B | ${per.dataset.toFixed(0)} B |`);
  console.log(
    `| per million resources | ${(per.keys * 1e6).toFixed(0)} | ${result.perMillionMiB.usedMemory.toFixed(0)} MiB | ${result.perMillionMiB.dataset.toFixed(0)} MiB |`,
  );
  console.log(
    `\nOne key per resource: ${sample} (MEMORY USAGE ${sampleKey.memoryUsage} B, pttl ${(sampleKey.pttl / 3.6e6).toFixed(1)} h, ` +
      `the default retention ${(DEFAULTS.fencingRetention / 3.6e6).toFixed(1)} h).`,
  );
  // Steady state: a resource's counter lives `retention` after its last lock, so a
  // node holds (new resources per unit of time) x retention counters.
  const retentions = [
    ['1 hour', 3.6e6],
    ['24 hours', 8.64e7],
    ['7 days', 6.048e8],
  ];
  const rates = [1e5, 1e6, 1e7];
  console.log(`\nSteady state per node, used_memory (new resources per day x retention x ${per.bytes.toFixed(0)} B):\n`);
  console.log(`| retention | ${rates.map((r) => `${r / 1e6}M new resources / day`).join(' | ')} |`);
  console.log(`|---|${rates.map(() => '---').join('|')}|`);
  for (const [name, ms] of retentions) {
    const cells = rates.map((r) => {
      const bytes = ((r * ms) / 8.64e7) * per.bytes;
      return bytes >= 2 ** 30 ? `${(bytes / 2 ** 30).toFixed(1)} GiB` : `${(bytes / MiB).toFixed(0)} MiB`;
    });
    console.log(`| ${name} | ${cells.join(' | ')} |`);
  }
} finally {
  await node.stop();
}
