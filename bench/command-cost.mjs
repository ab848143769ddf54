// Client CPU of one uncontended cycle for a few command layouts, written directly with
// ioredis (`node bench/command-cost.mjs`): what the acquire's shape costs apart from the
// library. One process, 5 local nodes, one caller; the layouts run in blocks of 2000
// cycles, interleaved in a new random order in each of 7 rounds after a warm-up; medians
// of CPU µs per cycle (process.cpuUsage) and the ratio to `raw` (SET NX PX, then a
// compare-and-delete script). The others acquire with a script (the same small one: only
// the client's side is compared) sent with:
//   `sha 1k+3a`   one key and three arguments,
//   `sha 1k+5a`   one key and five (the release with two more),
//   `sha 4k+5a`   the default acquire's layout before 2026-11-24: four keys and five
//                 arguments (the release: three keys and three arguments),
//   `multi 5cmd`  no script: MULTI, SET lock NX PX, SET counter <floor> NX PX, INCR
//                 counter, PEXPIRE counter, EXEC (a fencing counter raised without a
//                 script; see README, "Fencing tokens").
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { Redis } from 'ioredis';
import { startNode } from '../scripts/redis-spawner.mjs';
import { median, shuffle } from './report.mjs';

const nodes = await Promise.all(Array.from({ length: 5 }, () => startNode()));
try {
  const clients = await Promise.all(
    nodes.map(async (n) => {
      const client = new Redis(n.url, { maxRetriesPerRequest: 1, enableOfflineQueue: false });
      await once(client, 'ready');
      return client;
    }),
  );
  const quorum = 3;
  const atQuorum = (replies) =>
    new Promise((resolve) => {
      let yes = 0;
      for (const r of replies) r.then(() => ++yes === quorum && resolve());
    });
  const acquireLua = `if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return {1, 5} end return {0, 1}`;
  const releaseLua = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;
  const A = await Promise.all(clients.map((c) => c.script('LOAD', acquireLua)));
  const R = await Promise.all(clients.map((c) => c.script('LOAD', releaseLua)));
  const P = 'redlock:';
  const floor = String(Date.now() * 1000);
  const release = (k, v, ...more) => clients.map((c, i) => c.evalsha(R[i], 1, P + 'lock:' + k, v, ...more));
  const layouts = {
    raw: (k, v) => [clients.map((c) => c.set(k, v, 'PX', 10000, 'NX')), () => clients.map((c, i) => c.evalsha(R[i], 1, k, v))],
    'sha 1k+3a': (k, v) => [clients.map((c, i) => c.evalsha(A[i], 1, P + 'lock:' + k, v, '10000', floor)), () => release(k, v)],
    'sha 1k+5a': (k, v) => [
      clients.map((c, i) => c.evalsha(A[i], 1, P + 'lock:' + k, v, '10000', '-', '86400000', floor)),
      () => release(k, v, 'redlock:wake:', ''),
    ],
    'sha 4k+5a': (k, v) => [
      clients.map((c, i) =>
        c.evalsha(
          A[i],
          4,
          P + 'lock:' + k,
          P + 'fence:' + k,
          P + 'queue:' + k,
          P + 'queue-deadlines:' + k,
          v,
          '10000',
          'abcdef0123.0123456789abcdef 1795540897962 1700',
          '86400000',
          floor,
        ),
      ),
      () =>
        clients.map((c, i) => c.evalsha(R[i], 3, P + 'lock:' + k, P + 'queue:' + k, P + 'queue-deadlines:' + k, v, 'redlock:wake:', '')),
    ],
    'multi 5cmd': (k, v) => [
      clients.map((c) =>
        c
          .multi()
          .set(P + 'lock:' + k, v, 'PX', 10000, 'NX')
          .set(P + 'fence:' + k, floor, 'PX', 86400000, 'NX')
          .incr(P + 'fence:' + k)
          .pexpire(P + 'fence:' + k, 86400000)
          .exec(),
      ),
      () => release(k, v),
    ],
  };
  const names = Object.keys(layouts);
  const block = async (name, n) => {
    for (let i = 0; i < n; i++) {
      const [acquired, released] = layouts[name](`cpu:${name}:${i % 64}`, randomBytes(20).toString('base64url'));
      await atQuorum(acquired);
      await atQuorum(released());
    }
  };
  for (const name of names) await block(name, 2000);
  const cpu = Object.fromEntries(names.map((n) => [n, []]));
  for (let r = 0; r < 7; r++) {
    for (const name of shuffle(names)) {
      const before = process.cpuUsage();
      await block(name, 2000);
      const used = process.cpuUsage(before);
      cpu[name].push((used.user + used.system) / 2000);
    }
  }
  const raw = median(cpu.raw);
  console.log('| layout | CPU µs / cycle | / raw |\n|---|---|---|');
  for (const name of names) console.log(`| ${name} | ${median(cpu[name]).toFixed(1)} | ${(median(cpu[name]) / raw).toFixed(2)}x |`);
  await Promise.all(clients.map((c) => c.quit()));
} finally {
  await Promise.all(nodes.map((n) => n.stop()));
}
