// How far a client library lets any lock go at 64 callers, against how far this
// library goes over it (`node bench/client-floor.mjs` after a build, about 2 minutes).
//
// One process, 5 local nodes, `--callers` (64) concurrent callers on distinct keys.
// The floor of a client: the commands of this library's defaults (its ACQUIRE and
// RELEASE scripts by SHA, the same keys and arguments), sent with no library
// around them, each phase decided at quorum, the commands of a tick pipelined the
// best way the client has: one GLIDE `Batch` per node, or the ioredis socket
// corked for the tick. Beside them, this library over the same client library
// (GLIDE clients passed in; ioredis connections of its own). Every row uses the
// GLIDE and ioredis copies the build resolves (dist/esm in place: the root's), so
// that the library pipelines the GLIDE clients given to it. Interleaved in a new
// random order in each of `--rounds` (5) rounds of `--seconds` (3) after a 1 s
// warm-up each; medians of cycles/s and of the process's CPU per cycle (all its
// threads: GLIDE's native core runs on threads of its own). The ratio that
// matters is GLIDE over ioredis, for the floors and for the library, in one run.
// `--baseline=<copy of an older dist/esm>` (somewhere it resolves the same GLIDE
// copy, e.g. .tmp/) adds that build over GLIDE, for a before/after in one run.
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { startNode } from '../scripts/redis-spawner.mjs';
import { corked } from './corked.mjs';
import { median, option, shuffle } from './report.mjs';

const ROUNDS = Number(option('rounds', 5));
const SECONDS = Number(option('seconds', 3));
const CALLERS = Number(option('callers', 64));
const BASELINE = option('baseline', undefined);

const build = process.env.BENCH_NEST_REDLOCK ?? new URL('../dist/esm/core/index.js', import.meta.url).href;
const { Redlock } = await import(build);
const { ACQUIRE, RELEASE } = await import(new URL('./scripts.js', build).href);
const resolved = (name) => pathToFileURL(createRequire(new URL(build)).resolve(name)).href;
const { Redis } = await import(resolved('ioredis'));
const { GlideClient, Batch, Logger } = await import(resolved('@valkey/valkey-glide'));
Logger.setLoggerConfig('error');

const PREFIX = 'redlock:';
const TTL = 10_000;

/**
 * The defaults' cycle with nothing around it. `send(node, args, done)` sends one
 * command in this tick's pipeline to a node; a phase ends when a quorum answered.
 */
function floorOf(count, send) {
  const quorum = Math.floor(count / 2) + 1;
  const phase = (args) =>
    new Promise((resolve, reject) => {
      let answered = 0;
      for (let i = 0; i < count; i++) send(i, args, (error) => (error ? reject(error) : ++answered === quorum && resolve()));
    });
  return {
    async acquire(resource) {
      const value = randomBytes(16).toString('base64url');
      const keys = [`${PREFIX}lock:${resource}`];
      const { argv } = ACQUIRE.call(keys, {
        value,
        ttl: TTL,
        fair: { join: { waiter: `floor.${value}`, since: Date.now(), entryTtl: 1000 } },
        fencing: { retention: 7 * 86_400_000, floor: Date.now() * 1000 },
        prefixLength: PREFIX.length,
      });
      await phase(['EVALSHA', ACQUIRE.sha, '1', ...keys, ...argv]);
      return { keys, value };
    },
    release({ keys, value }) {
      const { argv } = RELEASE.call(keys, { value, fair: { prefixLength: PREFIX.length } });
      return phase(['EVALSHA', RELEASE.sha, '1', ...keys, ...argv]);
    },
  };
}

/** One GLIDE `Batch` per node per tick (one command goes alone). */
function glideSender(clients) {
  const queues = clients.map(() => undefined);
  const flush = (i) => {
    const queued = queues[i];
    queues[i] = undefined;
    if (queued.length === 1) {
      clients[i].customCommand(queued[0].args).then(() => queued[0].done(), queued[0].done);
      return;
    }
    const batch = new Batch(false);
    for (const { args } of queued) batch.customCommand(args);
    clients[i].exec(batch, false).then(
      (replies) => queued.forEach((q, k) => q.done(replies[k] instanceof Error ? replies[k] : undefined)),
      (error) => queued.forEach((q) => q.done(error)),
    );
  };
  return (i, args, done) => {
    if (!queues[i]) {
      queues[i] = [];
      process.nextTick(flush, i);
    }
    queues[i].push({ args, done });
  };
}

/** Each ioredis socket corked for the tick, as this library's ioredis adapter does. */
function ioredisSender(clients) {
  return (i, [, sha, ...rest], done) => {
    corked(clients[i], () => clients[i].evalsha(sha, ...rest)).then(() => done(), done);
  };
}

const nodes = await Promise.all(Array.from({ length: 5 }, () => startNode()));
const closers = [];
try {
  // requestTimeout: GLIDE's 250 ms default would fail commands on a loaded machine.
  const glideClients = () =>
    Promise.all(nodes.map((n) => GlideClient.createClient({ addresses: [{ host: '127.0.0.1', port: n.port }], requestTimeout: 2000 })));
  const glide = await glideClients();
  const glideForLibrary = await glideClients();
  const glideForBaseline = BASELINE ? await glideClients() : [];
  const ioredis = nodes.map((n) => new Redis({ host: '127.0.0.1', port: n.port }));
  closers.push(
    () => [...glide, ...glideForLibrary, ...glideForBaseline].forEach((c) => c.close()),
    () => ioredis.forEach((c) => c.disconnect()),
  );
  for (const client of glide) for (const s of [ACQUIRE, RELEASE]) await client.customCommand(['SCRIPT', 'LOAD', s.lua]);
  for (const client of ioredis) for (const s of [ACQUIRE, RELEASE]) await client.script('LOAD', s.lua);

  const libs = {
    'floor over GLIDE': floorOf(nodes.length, glideSender(glide)),
    'floor over ioredis': floorOf(nodes.length, ioredisSender(ioredis)),
  };
  const rows = [
    ['nest-redlock over GLIDE', Redlock, glideForLibrary],
    ['nest-redlock over ioredis', Redlock, nodes.map((n) => n.url)],
  ];
  if (BASELINE) {
    const { Redlock: Baseline } = await import(pathToFileURL(resolve(BASELINE, 'core/index.js')).href);
    rows.push(['nest-redlock over GLIDE (baseline)', Baseline, glideForBaseline]);
  }
  for (const [name, RedlockClass, nodeList] of rows) {
    const redlock = new RedlockClass({ nodes: nodeList, nodeTimeout: 2000 });
    await redlock.ready();
    closers.push(() => redlock.close());
    libs[name] = { acquire: (resource) => redlock.acquire(resource, TTL), release: (lock) => lock.release() };
  }

  const block = async (lib, ms) => {
    let cycles = 0;
    let stop = false;
    const started = performance.now();
    const cpu = process.cpuUsage();
    const timer = setTimeout(() => (stop = true), ms);
    await Promise.all(
      Array.from({ length: CALLERS }, async (_, caller) => {
        for (let i = 0; !stop; i++) {
          await lib.release(await lib.acquire(`floor:${caller}:${i % 4}`));
          cycles++;
        }
      }),
    );
    clearTimeout(timer);
    const used = process.cpuUsage(cpu);
    return { perSecond: cycles / ((performance.now() - started) / 1000), cpu: (used.user + used.system) / cycles };
  };

  const results = Object.fromEntries(Object.keys(libs).map((name) => [name, []]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const name of shuffle(Object.keys(libs))) {
      await block(libs[name], 1000);
      results[name].push(await block(libs[name], SECONDS * 1000));
    }
  }
  const rate = (name) => median(results[name].map((r) => r.perSecond));
  console.log(`\n${CALLERS} callers, distinct keys; ${ROUNDS} rounds x ${SECONDS} s, medians\n`);
  console.log('| row | cycles/s | client CPU µs / cycle | per round |');
  console.log('|---|---|---|---|');
  for (const [name, rounds] of Object.entries(results)) {
    const rates = rounds.map((r) => r.perSecond.toFixed(0)).join(' ');
    console.log(`| ${name} | ${rate(name).toFixed(0)} | ${median(rounds.map((r) => r.cpu)).toFixed(0)} | ${rates} |`);
  }
  const floors = rate('floor over GLIDE') / rate('floor over ioredis');
  const library = rate('nest-redlock over GLIDE') / rate('nest-redlock over ioredis');
  console.log(`\nGLIDE over ioredis: floors ${floors.toFixed(2)}x, this library ${library.toFixed(2)}x`);
  console.log(
    `this library over its client's floor: GLIDE ${(rate('nest-redlock over GLIDE') / rate('floor over GLIDE')).toFixed(2)}x, ioredis ${(rate('nest-redlock over ioredis') / rate('floor over ioredis')).toFixed(2)}x`,
  );
} finally {
  for (const close of closers) await close();
  await Promise.all(nodes.map((n) => n.stop()));
}
