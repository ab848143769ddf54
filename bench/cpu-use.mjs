// CPU time spent while a scenario runs, from /proc (Linux): the whole machine's
// (every process: the workers, the nodes, anything else) and the nodes' own. For
// the contended scenarios, where the workers' hand-offs, not a single process,
// bound the rate: CPU per acquisition says which side a library's cost is on.
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';

const PERIOD = 50; // ms between samples
const now = () => Number(process.hrtime.bigint()) / 1e6; // the workers' clock (see worker.mjs)

/** Jiffies: the machine's busy and total time over all cores; the processes' user + system time. */
function sample(pids) {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0].trim().split(/\s+/).slice(1).map(Number);
  const total = fields.reduce((a, b) => a + b, 0);
  const idle = fields[3] + (fields[4] ?? 0); // idle + iowait
  let nodes = 0;
  for (const pid of pids) {
    // Fields after the command name, which may hold spaces: utime and stime are the 12th and 13th.
    const rest = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ').at(-1).split(' ');
    nodes += Number(rest[11]) + Number(rest[12]);
  }
  return { at: now(), busy: total - idle, total, nodes };
}

/**
 * Samples from now until `stop()`, which returns `between(from, to)`: the CPU
 * used in that span (times on the workers' clock), in cores (1 = one core busy
 * all the time): `{ machine, nodes }`. Without /proc (or with a node gone), `between` returns undefined.
 */
export function watchCpu(pids) {
  const samples = [];
  const take = () => {
    try {
      samples.push(sample(pids));
    } catch {
      samples.length = 0;
      clearInterval(timer);
    }
  };
  const timer = setInterval(take, PERIOD);
  take();
  return {
    stop() {
      clearInterval(timer);
      return (from, to) => {
        const inside = samples.filter((s) => s.at >= from && s.at <= to);
        if (inside.length < 2) return undefined;
        const a = inside[0];
        const b = inside.at(-1);
        const elapsed = (b.total - a.total) / cpus().length; // jiffies of one core
        return { machine: (b.busy - a.busy) / elapsed, nodes: (b.nodes - a.nodes) / elapsed };
      };
    },
  };
}
