// Node time of a contended hand-off's scripts: this library's against the fair floor's
// (`node bench/handoff-scripts.mjs`, after `npm run build` and `npm --prefix bench install`).
//
// One local node, one connection, nothing else running on the node. Two waiters take one
// resource in turn as the contention scenario's processes do, by the scripts alone: per
// hand-off, the next waiter's attempt is refused and queues it, then the holder's release
// hands the resource over to it. This library's ACQUIRE (fencing and fair waiting on, as
// the defaults send it) and RELEASE (the holder leaving the queue it waited in) against
// the fair floor's attempt and release (adapters/index.mjs, FAIR_FLOOR). Blocks of
// `--handoffs` hand-offs, interleaved over `--rounds` rounds; per block the node's own
// time (INFO commandstats, reset before it) per hand-off: the scripts' total, and the
// commands they ran inside with those commands' share. Prints the medians over rounds.
import { Redis } from 'ioredis';
import { startNode } from '../scripts/redis-spawner.mjs';
import { FAIR_FLOOR } from './adapters/index.mjs';
import { option } from './report.mjs';
import { printScriptTime, scriptTime } from './script-time.mjs';

const ROUNDS = Number(option('rounds', 5));
const HANDOFFS = Number(option('handoffs', 10_000));

const { ACQUIRE, RELEASE } = await import(new URL('../dist/esm/core/scripts.js', import.meta.url).href);
const node = await startNode();
const client = new Redis(node.url);
try {
  const load = (lua) => client.script('LOAD', lua);
  const [acquire, release, fairAcquire, fairLeave] = await Promise.all(
    [ACQUIRE.lua, RELEASE.lua, FAIR_FLOOR.acquire, FAIR_FLOOR.leave].map(load),
  );
  // Values and waiter ids as long as the library's (20 random bytes in base64url; a 6-byte
  // client id and an 8-byte call id in hex: see acquire-plan.ts); the default prefix.
  const values = ['a', 'b'].map((c) => c.repeat(27));
  const waiters = ['1', '2'].map((c) => `${c.repeat(12)}.${'0'.repeat(16)}`);
  const prefix = 'redlock:';
  const prefixLength = String(Buffer.byteLength(prefix));
  const retention = String(24 * 3600 * 1000);
  const ways = {
    'nest-redlock': async (n) => {
      const key = `${prefix}lock:handoff`;
      await client.set(key, values[0], 'PX', 10_000);
      // The clock as the attempts read it, 3 ms on per hand-off as in the contention scenario
      // (at this loop's pace most hand-offs would share a millisecond, and the fencing
      // counter, ahead of the floor, would take the second write it rarely takes there).
      const start = Date.now();
      for (let i = 0, holder = 0; i < n; i++, holder = 1 - holder) {
        const next = 1 - holder;
        const now = start + 3 * i;
        const spec = `${waiters[next]} ${now} 30000 1`;
        await client.evalsha(acquire, 1, key, values[next], '10000', spec, prefixLength, retention, String(now * 1000));
        await client.evalsha(release, 1, key, values[holder], prefixLength, waiters[holder]);
      }
    },
    'fair floor': async (n) => {
      const key = 'fair-floor:handoff';
      await client.set(key, values[0], 'PX', 10_000);
      for (let i = 0, holder = 0; i < n; i++, holder = 1 - holder) {
        const next = 1 - holder;
        await client.evalsha(fairAcquire, 2, key, `${key}:waiters`, values[next], '10000', 'fair-floor');
        await client.evalsha(fairLeave, 2, key, `${key}:waiters`, values[holder], `fair-floor 10000 ${values[holder]}`);
      }
    },
  };
  const results = await scriptTime(client, ways, { rounds: ROUNDS, n: HANDOFFS, warmup: 1000 });
  printScriptTime(`Node time per contended hand-off (${ROUNDS} rounds x ${HANDOFFS} hand-offs, one node; medians)`, 'hand-off', results);
} finally {
  client.disconnect();
  await node.stop();
}
