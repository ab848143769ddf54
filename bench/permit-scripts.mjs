// Node time of a contended semaphore's scripts: this library's against the fenced fair
// floor's (`node bench/permit-scripts.mjs`, after `npm run build` and `npm --prefix bench install`).
//
// One local node, one connection, nothing else running on the node. 16 callers take
// permits of one semaphore of limit 4 in turn as the semaphore scenario's processes do, by
// the scripts alone, with the keys and arguments each sends (this library's through its own
// permitCalls, fencing and fair waiting on): 4 hold, 12 wait in the queue. Per permit, the
// oldest holder releases, and the release hands its permit over to the first waiter; then
// that caller asks again, is refused and queues last. Blocks of `--permits` permits,
// interleaved over `--rounds` rounds; per block the node's own time (INFO commandstats,
// reset before it) per permit: the scripts' total, and the commands they ran inside.
// `--baseline=<copy of an older dist/esm>` adds that build's scripts, for a before/after.
// `--refused`: a refused attempt's cost instead (the last waiter's attempt, sent again and again).
// Prints the medians over rounds.
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import { startNode } from '../scripts/redis-spawner.mjs';
import { FENCED_PERMIT } from './adapters/index.mjs';
import { option } from './report.mjs';
import { printScriptTime, scriptTime } from './script-time.mjs';

const ROUNDS = Number(option('rounds', 5));
const PERMITS = Number(option('permits', 10_000));
const BASELINE = option('baseline', undefined);
// --refused: only the last caller's attempt, refused and sent again and again (see run below).
const REFUSED = process.argv.includes('--refused');
const LIMIT = 4;
const CALLERS = 16;
const TTL = 30_000;
const ENTRY_TTL = 900;
const RETENTION = 7 * 24 * 3600 * 1000;

const build = async (dir) => ({
  ...(await import(pathToFileURL(resolve(dir, 'core/permit.js')).href)),
  ...(await import(pathToFileURL(resolve(dir, 'core/keys.js')).href)),
  ...(await import(pathToFileURL(resolve(dir, 'core/script.js')).href)),
});
const node = await startNode();
const client = new Redis(node.url);
try {
  const [floorAcquire, floorRelease] = await Promise.all(
    [FENCED_PERMIT.acquire, FENCED_PERMIT.release].map((lua) => client.script('LOAD', lua)),
  );
  // The callers take permits in turn (see the top), or with --refused the last of them asks
  // again and again while the others hold and wait: a refused attempt's own cost.
  const run = async (ask, n) => {
    const queue = [];
    for (let i = 0; i < CALLERS; i++) queue.push(await ask());
    // The first LIMIT were admitted; the others wait, in order.
    if (REFUSED) for (let i = 0; i < n; i++) await queue.at(-1).again();
    else
      for (let i = 0; i < n; i++) {
        await queue.shift().release();
        queue.push(await ask());
      }
    for (const caller of queue) await caller.release();
  };
  // A caller of this library: its permit's calls, built as an acquire builds them.
  const library = async (dir) => {
    const { permitCalls, KeyLayout, runScript } = await build(dir);
    const layout = new KeyLayout('redlock:', false);
    const clientId = randomBytes(6).toString('hex');
    const options = { fencing: true, fair: true, wakePrefix: 'redlock:wake:', nodes: 5 };
    // As the library sends a script: EVALSHA, and EVAL once on NOSCRIPT (in the warm-up).
    const send = (call) => runScript(client, call.command, call.keys, call.argv);
    let position = Date.now();
    const ask = async () => {
      // A value as long as one with a recorded identity (see holder.ts).
      const value = randomBytes(20).toString('base64url') + '.' + randomBytes(30).toString('base64url');
      const waiter = `${clientId}.${randomBytes(8).toString('hex')}`;
      const calls = permitCalls(layout, 'permits', { kind: String(LIMIT), writer: false }, value, options);
      position += 0.01;
      const attempt = calls.acquire({
        ttl: TTL,
        fair: { join: { waiter, since: position, entryTtl: ENTRY_TTL } },
        fencing: { retention: RETENTION, floor: Date.now() * 1000 },
        attempt: 1,
      });
      await send(attempt);
      return { again: () => send(attempt), release: () => send(calls.release({ member: true, leaving: waiter, skip: '' })) };
    };
    return (n) => run(ask, n);
  };
  let since = Date.now();
  const floor = (n) => {
    const key = 'fenced-floor:permits';
    const keys = [key, `${key}:waiters`, `${key}:data`, `${key}:fence`];
    const ask = async () => {
      since += 0.01; // in the order asked, as this library's positions (ms with µs digits)
      const value = randomBytes(20).toString('base64url');
      const me = `fenced-permit-floor:wake ${randomBytes(8).toString('base64url')}`;
      const argv = [me, value, LIMIT, since.toFixed(3), TTL, ENTRY_TTL, Date.now() * 1000, RETENTION];
      const again = () => client.evalsha(floorAcquire, 4, ...keys, ...argv);
      await again();
      return { again, release: () => client.evalsha(floorRelease, 4, ...keys, value, LIMIT, RETENTION) };
    };
    return run(ask, n);
  };
  const ways = {
    'nest-redlock': await library(new URL('../dist/esm', import.meta.url).pathname),
    ...(BASELINE && { 'nest-redlock (baseline)': await library(BASELINE) }),
    'raw (fenced fair semaphore)': floor,
  };
  const results = await scriptTime(client, ways, { rounds: ROUNDS, n: PERMITS, warmup: 2000 });
  const what = REFUSED ? 'refused attempt' : 'contended permit';
  printScriptTime(
    `Node time per ${what} (${ROUNDS} rounds x ${PERMITS}, limit ${LIMIT}, ${CALLERS} callers, one node; medians)`,
    REFUSED ? 'attempt' : 'permit',
    results,
  );
} finally {
  client.disconnect();
  await node.stop();
}
