// Where the wall time of one uncontended acquire + release goes, per library
// (`node bench/cycle-phases.mjs`, after `npm run build` and `npm --prefix bench install`).
//
// One process, 5 local nodes, one caller, 64 reused keys; the libraries (adapters/index.mjs,
// `--libs=a,b`; by default the raw round, the floor of fencing and fair waiting, and this
// library's plain protocol and defaults) run in blocks of `--cycles` cycles, interleaved in
// a new random order in each of `--rounds` rounds after a warm-up. Every socket write
// (net.Socket's `_writeGeneric`, which both a plain write and a corked socket's flush go
// through) and every socket `data` event is timestamped. Per phase (acquire, release),
// medians over the cycles, in µs from the phase's start: the first and the last write (one
// per node), the third reply read (a majority of 5: each node answers once per phase with
// these settings, no waiting, no wake-up channel), and from that reply to the call's
// resolution. Diagnostics only: it patches Node internals of this process.
import net from 'node:net';
import { startNode } from '../scripts/redis-spawner.mjs';
import { adapters } from './adapters/index.mjs';
import { median, option, shuffle } from './report.mjs';

const ROUNDS = Number(option('rounds', 6));
const CYCLES = Number(option('cycles', 1500));
const LIBS = option('libs', 'raw,raw (floor: fencing and fair waiting),nest-redlock (fencing and fair waiting off),nest-redlock').split(
  ',',
);

/** The events of the cycle being measured: [kind, performance.now()]; null between cycles. */
let events = null;
const writeGeneric = net.Socket.prototype._writeGeneric;
net.Socket.prototype._writeGeneric = function (...args) {
  events?.push(['write', performance.now()]);
  return writeGeneric.apply(this, args);
};
const emit = net.Socket.prototype.emit;
net.Socket.prototype.emit = function (name, ...args) {
  if (name === 'data') events?.push(['read', performance.now()]);
  return emit.call(this, name, ...args);
};

/** One phase's marks, µs from `start`; undefined when it saw fewer than 3 replies. */
function phase(list, start, end) {
  const at = (kind) => list.filter((e) => e[0] === kind).map((e) => (e[1] - start) * 1000);
  const writes = at('write');
  const reads = at('read');
  if (reads.length < 3 || writes.length === 0) return undefined;
  return { firstWrite: writes[0], lastWrite: writes.at(-1), majority: reads[2], resolved: (end - start) * 1000 };
}

const nodes = await Promise.all(Array.from({ length: 5 }, () => startNode()));
try {
  const urls = nodes.map((n) => n.url);
  const libs = {};
  for (const name of LIBS) {
    libs[name] = await adapters[name].create(urls, { wait: false, nodeTimeout: 2000 });
    await libs[name].ready();
  }
  const samples = Object.fromEntries(LIBS.map((l) => [l, []]));
  const block = async (name, n, keep) => {
    const lib = libs[name];
    for (let i = 0; i < n; i++) {
      const list = [];
      const t0 = performance.now();
      events = list;
      const handle = await lib.acquire(`phases:${name}:${i % 64}`, 10_000);
      const t1 = performance.now();
      const split = list.length;
      await lib.release(handle);
      const t2 = performance.now();
      events = null;
      const acquire = phase(list.slice(0, split), t0, t1);
      const release = phase(list.slice(split), t1, t2);
      if (keep && acquire && release) samples[name].push({ acquire, release, total: (t2 - t0) * 1000 });
    }
  };
  for (const name of LIBS) await block(name, CYCLES, false);
  for (let r = 0; r < ROUNDS; r++) for (const name of shuffle([...LIBS])) await block(name, CYCLES, true);
  console.log(`\n### Phases of an uncontended cycle (${ROUNDS} rounds x ${CYCLES} cycles, 5 nodes, one caller; medians, µs)\n`);
  console.log(
    '| library | cycle | acquire: first write / last write / 3rd reply / resolved | release: first write / last write / 3rd reply / resolved |',
  );
  console.log('|---|---|---|---|');
  const m = (rows, f) => median(rows.map(f)).toFixed(0);
  const cells = (rows, p) => ['firstWrite', 'lastWrite', 'majority', 'resolved'].map((k) => m(rows, (s) => s[p][k])).join(' / ');
  for (const name of LIBS) {
    const rows = samples[name];
    console.log(`| ${name} | ${m(rows, (s) => s.total)} | ${cells(rows, 'acquire')} | ${cells(rows, 'release')} |`);
  }
  for (const lib of Object.values(libs)) await lib.close();
} finally {
  await Promise.all(nodes.map((n) => n.stop()));
}
