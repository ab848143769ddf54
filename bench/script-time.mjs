// The node's script time per operation, for handoff-scripts.mjs: each
// way runs `n` operations on one node through `client`, in blocks interleaved over `rounds`
// rounds in a new random order each; per block, from INFO commandstats (reset before it),
// the scripts' time, the commands they ran inside and those commands' time, per operation.
import { median, shuffle } from './report.mjs';

/** Runs the ways (`{ name: async (n) => ... }`) after a warm-up of `warmup` operations each; per way, each round's figures. */
export async function scriptTime(client, ways, { rounds, n, warmup }) {
  const results = Object.fromEntries(Object.keys(ways).map((w) => [w, []]));
  for (const way of Object.keys(ways)) await ways[way](warmup);
  for (let r = 0; r < rounds; r++) {
    for (const way of shuffle(Object.keys(ways))) {
      await client.flushall();
      await client.config('RESETSTAT');
      await ways[way](n);
      const stats = await client.info('commandstats');
      const all = [...stats.matchAll(/^cmdstat_(\w+):calls=(\d+),usec=(\d+)/gm)].map(([, name, calls, usec]) => ({
        name,
        calls: +calls,
        usec: +usec,
      }));
      const scripts = all.filter((s) => s.name === 'evalsha' || s.name === 'eval');
      const inside = all.filter((s) => !['evalsha', 'eval', 'flushall', 'config', 'info', 'script'].includes(s.name));
      results[way].push({
        total: scripts.reduce((sum, s) => sum + s.usec, 0) / n,
        inner: inside.reduce((sum, s) => sum + s.usec, 0) / n,
        calls: inside.reduce((sum, s) => sum + s.calls, 0) / n,
      });
    }
  }
  return results;
}

/** Prints `results` (of scriptTime) under `title`, per `unit` ('hand-off', 'permit'...): medians over rounds. */
export function printScriptTime(title, unit, results) {
  console.log(`### ${title}\n`);
  console.log(`| scripts | µs per ${unit} | commands inside | their µs | per round |`);
  console.log('|---|---|---|---|---|');
  for (const [way, rounds] of Object.entries(results)) {
    const m = (k) => median(rounds.map((r) => r[k]));
    console.log(
      `| ${way} | ${m('total').toFixed(1)} | ${m('calls').toFixed(1)} | ${m('inner').toFixed(1)} | ${rounds.map((r) => r.total.toFixed(1)).join(' ')} |`,
    );
  }
}
