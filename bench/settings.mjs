// What one run does: --quick (smaller numbers), --only=<scenarios>, BENCH_LIBS=<libraries>.
import { adapters } from './adapters/index.mjs';

export const QUICK = process.argv.includes('--quick');
export const P = QUICK
  ? {
      rounds: 2,
      cycles: 150, // uncontended
      tpRounds: 1,
      tpMs: 1000, // 64-way throughput
      cRounds: 1,
      cMs: 1000,
      cWarm: 1000, // contention and semaphore: unmeasured contention before the window
      cGrace: 1000, // contention
      dRounds: 1,
      dCycles: 100,
      dDeadline: 1000, // degraded
      memCycles: 5000,
      memConcurrency: 64,
      nRounds: 1,
      nCycles: 200,
    }
  : {
      rounds: 5,
      cycles: 1000,
      tpRounds: 7, // the 64-caller ratios between rows swing by ±15% over 3 rounds on a shared 2-core machine
      tpMs: 1500,
      cRounds: 5, // the semaphore scenario over 2 rounds: 0.99x, 0.88x, 1.11x RedlockSemaphore in three runs of one hour
      cMs: 3000,
      // Steady state, not start-up: a contended acquisition runs more code than an uncontended one
      // (refusals, queues, hand-overs) at 30-60 acquisitions per second per process, and V8 takes
      // that long to compile it. Over 40 s windows the acquisitions per second of every library
      // rose for 15-20 s before they settled: nest-redlock's semaphore from 400 to 700-800,
      // RedlockSemaphore's from 200-400 to 850-950, node-redlock v4's from 330 to 450.
      cWarm: 20_000,
      cGrace: 12_000,
      dRounds: 3,
      dCycles: 400,
      dDeadline: 2000,
      memCycles: 200_000,
      memConcurrency: 64,
      nRounds: 3,
      nCycles: 400,
    };

// Split on the commas outside parentheses: some names have commas inside theirs.
export const only = process.env.BENCH_LIBS?.split(/,(?![^(]*\))/).map((s) => s.trim());
// --only=memory,contention: only those scenarios (uncontended, throughput, contention, semaphore, oneDown, twoPaused, memory, nodes).
export const scenarios = process.argv
  .find((a) => a.startsWith('--only='))
  ?.slice(7)
  .split(',');
export const want = (name) => !scenarios || scenarios.includes(name);
export const isPeer = (l) => !l.startsWith('nest-redlock') && !l.startsWith('raw');
/** The libraries themselves, plus the variants (of nest-redlock's settings) of one kind of scenario. */
export const MAIN = (libs, variant) => libs.filter((l) => !adapters[l].variant || adapters[l].variant === variant);
