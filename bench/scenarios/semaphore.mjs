// 4. Semaphore: 16 processes take permits of one semaphore of limit 4 in a loop
// with 1 ms holds, this library against redis-semaphore's RedlockSemaphore.
// Same rounds, windows and grace as the single-key contention (contention.mjs).
import { adapters, SEMAPHORE_PERMITS } from '../adapters/index.mjs';
import { P } from '../settings.mjs';
import { fmt, log, median, ratio, shuffle, table } from '../report.mjs';
import { contentionRound, CPU_NOTE, cpuPerAcquisition, showCpu } from './contention.mjs';

const PROCESSES = 16;
const PEER = 'redis-semaphore RedlockSemaphore';

export async function semaphore({ results, urls5, nodes, libs }) {
  const nodePids = nodes.slice(0, 5).map((n) => n.pid);
  const SLIBS = libs.semaphore;
  if (!SLIBS.length) return;
  const sRounds = Object.fromEntries(SLIBS.map((l) => [l, []]));
  for (let r = 0; r < P.cRounds; r++) {
    log(`semaphore: round ${r + 1}/${P.cRounds}`);
    for (const lib of shuffle(SLIBS)) {
      sRounds[lib].push(await contentionRound(lib, r, urls5, { processes: PROCESSES, permits: SEMAPHORE_PERMITS, nodePids }));
    }
  }
  const measured = {};
  for (const lib of SLIBS) {
    const rs = sRounds[lib].filter((c) => c.perSecond !== undefined);
    if (!rs.length) {
      measured[lib] = { error: sRounds[lib][0]?.error ?? 'failed', rounds: sRounds[lib] };
      continue;
    }
    const mid = [...rs].sort((a, b) => a.perSecond - b.perSecond)[Math.floor((rs.length - 1) / 2)];
    measured[lib] = {
      perSecond: median(rs.map((c) => c.perSecond)),
      fairness: median(rs.map((c) => c.fairness)),
      longestWait: median(rs.map((c) => c.longestWait)),
      longestWaitOpen: rs.some((c) => c.longestWaitOpen),
      waitP99: median(rs.map((c) => c.waitP99)),
      stillWaiting: rs.reduce((s, c) => s + c.stillWaiting, 0),
      mostHolders: Math.max(...rs.map((c) => c.mostHolders)),
      sameProcessAgain: median(rs.map((c) => c.sameProcessAgain)),
      counts: mid.counts,
      attempts: median(rs.map((c) => c.attempts)),
      cpu: cpuPerAcquisition(rs),
      gaveUp: rs.reduce((s, c) => s + c.gaveUp, 0),
      rounds: sRounds[lib],
    };
  }
  results.scenarios.semaphore = measured;
  const notes = [
    'acq/s: permits acquired inside the window, all processes; vs peer: over RedlockSemaphore in the same run;',
    'worst/best: fewest / most acquisitions of one process; wait p99: of the permits acquired in the window;',
    `longest wait: longest single acquire call (measured up to ${P.cGrace / 1000} s after the window); most at once: most permits`,
    'held at once over all rounds (from the acquire returning to the release call starting, so never more than were really',
    `held: above ${SEMAPHORE_PERMITS} is a broken limit).`,
    CPU_NOTE,
    'Waiting settings:',
    ...SLIBS.map((l) => `  ${l}: ${adapters[l].waits}`),
  ];
  for (const l of SLIBS) {
    const c = measured[l];
    if (c.stillWaiting)
      notes.push(
        `${l}: ${c.stillWaiting} acquire calls were still waiting ${P.cGrace / 1000} s after the window (their wait is shown as ">=")`,
      );
    if (c.gaveUp)
      notes.push(`${l}: ${c.gaveUp} acquire calls gave up over all rounds (${c.rounds.find((r) => r.gaveUpFirst)?.gaveUpFirst})`);
  }
  const peer = measured[PEER]?.perSecond;
  table(
    `${PROCESSES} processes, one semaphore of limit ${SEMAPHORE_PERMITS}, 1 ms holds (${P.cRounds} round(s) x ${P.cMs / 1000} s after ${P.cWarm / 1000} s of the same contention, medians; per-process counts of the median round)`,
    [
      'library',
      'acq/s',
      'vs peer',
      'worst/best',
      'longest wait ms',
      'wait p99 ms',
      'most at once',
      'same process again',
      'attempts / acq',
      'CPU ms / acq (nodes)',
      'per process',
    ],
    SLIBS.map((l) => {
      const c = measured[l];
      return c.error
        ? [l, `failed: ${c.error}`, '', '', '', '', '', '', '', '', '']
        : [
            l,
            fmt(c.perSecond),
            ratio(c.perSecond, peer),
            c.fairness.toFixed(2),
            `${c.longestWaitOpen ? '>= ' : ''}${fmt(c.longestWait)}`,
            fmt(c.waitP99),
            String(c.mostHolders),
            `${(c.sameProcessAgain * 100).toFixed(0)}%`,
            fmt(c.attempts, 1),
            showCpu(c.cpu),
            c.counts.join(' '),
          ];
    }),
    notes,
  );
}
