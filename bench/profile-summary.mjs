// Summary of a .cpuprofile (from cycle-cpu.mjs --profile, or node --cpu-prof):
// self time by function and by file, and total (inclusive) time of this library's
// functions, as shares of the profile. `node bench/profile-summary.mjs <file> [top]`.
// Samples are counted, not their time deltas: a delta is wall time, and on a
// loaded machine the time the process spent descheduled (often right after a
// socket write woke a redis-server on the same core) lands on whatever ran
// next. One sample per signal approximates CPU time; idle samples are left out,
// so the shares are of the time the process was running.
import { readFileSync } from 'node:fs';

const [file, topArg] = process.argv.slice(2);
const TOP = Number(topArg ?? 40);
const profile = JSON.parse(readFileSync(file, 'utf8'));
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const self = new Map();
for (let i = 0; i < profile.samples.length; i++) {
  const dt = 1;
  self.set(profile.samples[i], (self.get(profile.samples[i]) ?? 0) + dt);
}
const parent = new Map();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const idle = new Set(profile.nodes.filter((n) => n.callFrame.functionName === '(idle)').map((n) => n.id));
for (const id of idle) self.delete(id);
const total = [...self.values()].reduce((a, b) => a + b, 0);
const where = (n) => {
  const url = n.callFrame.url.replace(/^file:\/\//, '');
  const short = url.replace(/.*\/(node_modules\/[^/]+|\.cache\/\d+|dist\/esm)\//, '$1/');
  return `${n.callFrame.functionName || '(anonymous)'} ${short || '(native)'}:${n.callFrame.lineNumber + 1}`;
};
const add = (map, key, v) => map.set(key, (map.get(key) ?? 0) + v);
const selfBy = new Map();
const fileBy = new Map();
const inclusive = new Map();
for (const [id, t] of self) {
  const n = byId.get(id);
  add(selfBy, where(n), t);
  add(fileBy, n.callFrame.url.replace(/.*\/(node_modules\/[^/]+|\.cache\/\d+\/|dist\/esm\/)/, '$1') || `(${n.callFrame.functionName})`, t);
  // Inclusive: every distinct frame on the stack gets the sample once.
  const seen = new Set();
  for (let p = id; p !== undefined; p = parent.get(p)) {
    const key = where(byId.get(p));
    if (!seen.has(key)) {
      seen.add(key);
      add(inclusive, key, t);
    }
  }
}
const pct = (t) => `${((100 * t) / total).toFixed(1)}%`;
const show = (title, map, filter = () => true) => {
  console.log(`\n## ${title}`);
  [...map]
    .filter(([k]) => filter(k))
    .sort((a, b) => b[1] - a[1])
    .slice(0, TOP)
    .forEach(([k, t]) => console.log(`${pct(t).padStart(6)}  ${k}`));
};
console.log(`${file}: ${total} samples while running`);
show('self time by file', fileBy);
show('self time by function', selfBy);
show("total time of this library's functions", inclusive, (k) => /\.cache\/\d+|dist\/esm|core\/|nest-redlock/.test(k));
