// 3. Single-key contention: 8 processes take one key in a loop with 1 ms holds.
import { adapters } from '../adapters/index.mjs';
import { P, isPeer } from '../settings.mjs';
import { fmt, log, median, percentile, ratio, shuffle, table } from '../report.mjs';
import { runWorker } from '../workers.mjs';
import { watchCpu } from '../cpu-use.mjs';

export async function contention({ results, urls5, nodes, libs }) {
  const nodePids = nodes.slice(0, 5).map((n) => n.pid);
  const CLIBS = libs.contention;
  const cRounds = Object.fromEntries(CLIBS.map((l) => [l, []]));
  for (let r = 0; r < P.cRounds; r++) {
    log(`contention: round ${r + 1}/${P.cRounds}`);
    for (const lib of shuffle(CLIBS)) cRounds[lib].push(await contentionRound(lib, r, urls5, { nodePids }));
  }
  const contended = {};
  for (const lib of CLIBS) {
    const rs = cRounds[lib].filter((c) => c.perSecond !== undefined);
    if (!rs.length) {
      contended[lib] = { error: cRounds[lib][0]?.error ?? 'failed', rounds: cRounds[lib] };
      continue;
    }
    const mid = [...rs].sort((a, b) => a.perSecond - b.perSecond)[Math.floor((rs.length - 1) / 2)];
    contended[lib] = {
      perSecond: median(rs.map((c) => c.perSecond)),
      fairness: median(rs.map((c) => c.fairness)),
      longestWait: median(rs.map((c) => c.longestWait)),
      longestWaitOpen: rs.some((c) => c.longestWaitOpen),
      waitP99: median(rs.map((c) => c.waitP99)),
      stillWaiting: rs.reduce((s, c) => s + c.stillWaiting, 0),
      handoffP50: median(rs.map((c) => c.handoffP50)),
      releaseP50: median(rs.map((c) => c.releaseP50)),
      cpu: cpuPerAcquisition(rs),
      sameProcessAgain: median(rs.map((c) => c.sameProcessAgain)),
      counts: mid.counts,
      attempts: median(rs.map((c) => c.attempts)),
      gaveUp: rs.reduce((s, c) => s + c.gaveUp, 0),
      overlaps: rs.reduce((s, c) => s + c.overlaps, 0),
      rounds: cRounds[lib],
    };
  }
  results.scenarios.contention = contended;
  const cBest = Math.max(0, ...CLIBS.filter(isPeer).map((l) => contended[l].perSecond ?? 0));
  const cNotes = [
    'acq/s: acquisitions inside the window, all processes; worst/best: fewest / most acquisitions of one process;',
    `longest wait: longest single acquire call (measured up to ${P.cGrace / 1000} s after the window); wait p99: of the acquisitions`,
    'in the window; hand-off: from a holder starting its release to the next acquisition by another process; same process',
    'again: share of acquisitions that went to the process that had just released; in round trips: the hand-off over the',
    'median release call in the same run (one round to a quorum, under the same load); attempts / acq: mean attempts per acquisition, where the library reports them;',
    CPU_NOTE,
    'Waiting settings:',
    ...CLIBS.map((l) => `  ${l}: ${adapters[l].waits}`),
  ];
  for (const l of CLIBS) {
    const c = contended[l];
    if (c.stillWaiting)
      cNotes.push(
        `${l}: ${c.stillWaiting} acquire calls were still waiting ${P.cGrace / 1000} s after the window (their wait is shown as ">=")`,
      );
    if (c.gaveUp)
      cNotes.push(`${l}: ${c.gaveUp} acquire calls gave up over all rounds (${c.rounds.find((r) => r.gaveUpFirst)?.gaveUpFirst})`);
    if (c.overlaps)
      cNotes.push(
        `${l}: ${c.overlaps} acquisitions started before the previous holder's release (mutual exclusion broken, or clock skew between processes)`,
      );
  }
  table(
    `8 processes, one key, 1 ms holds (${P.cRounds} round(s) x ${P.cMs / 1000} s after ${P.cWarm / 1000} s of the same contention, medians; per-process counts of the median round)`,
    [
      'library',
      'acq/s',
      'vs best peer',
      'worst/best',
      'longest wait ms',
      'wait p99 ms',
      'hand-off p50 ms',
      'in round trips',
      'same process again',
      'attempts / acq',
      'CPU ms / acq (nodes)',
      'per process',
    ],
    CLIBS.map((l) => {
      const c = contended[l];
      return c.error
        ? [l, `failed: ${c.error}`, '', '', '', '', '', '', '', '', '', '']
        : [
            l,
            fmt(c.perSecond),
            ratio(c.perSecond, cBest),
            c.fairness.toFixed(2),
            `${c.longestWaitOpen ? '>= ' : ''}${fmt(c.longestWait)}`,
            fmt(c.waitP99),
            fmt(c.handoffP50, 2),
            fmt(c.handoffP50 / c.releaseP50, 1),
            `${(c.sameProcessAgain * 100).toFixed(0)}%`,
            fmt(c.attempts, 1),
            showCpu(c.cpu),
            c.counts.join(' '),
          ];
    }),
    cNotes,
  );
}

/**
 * `processes` (8) processes take one key in a loop with 1 ms holds; with
 * `permits`, a semaphore adapter's limit (the semaphore scenario).
 */
export async function contentionRound(lib, round, urls, { processes = 8, permits, nodePids = [] } = {}) {
  const n = processes;
  const key = `contended:${lib.replace(/\W+/g, '-')}:${round}:${Date.now()}`; // never one a previous run left held
  let waiting = n;
  let release;
  const allReady = new Promise((r) => (release = r));
  // startAt on worker.mjs's clock, the host's monotonic one.
  // The processes contend from `warm` ms before startAt, unmeasured (see P.cWarm).
  const arrived = () =>
    --waiting === 0 && release({ startAt: Number(process.hrtime.bigint()) / 1e6 + 100 + P.cWarm, ms: P.cMs, warm: P.cWarm });
  const params = { key, hold: 1, grace: P.cGrace, limit: P.cWarm + P.cMs + P.cGrace + 30_000, permits };
  // Every process keeps the load up until all have finished measuring (or died), then
  // stops: see worker.mjs. Once 'stop' is sent no measured call is open, so exits no
  // longer touch the measurement.
  const cpu = watchCpu(nodePids);
  const measuring = [];
  const drained = new Set();
  const drain = (who) => {
    drained.add(who);
    if (drained.size === n) for (const c of measuring) if (c.connected) c.send({ type: 'stop' });
  };
  const runs = await Promise.all(
    Array.from({ length: n }, (_, p) =>
      runWorker(
        lib,
        urls,
        'contend',
        { ...params, first: p === 0 },
        {
          ready: () => (arrived(), allReady),
          failed: arrived,
          message: (m, child) => m.type === 'drained' && (measuring.push(child), drain(child)),
          // Called without a worker when one exited without a result: it measures no more.
          result: (child) => child || drain(Symbol('died')),
        },
      ),
    ),
  );
  const cpuBetween = cpu.stop();
  const error = runs.find((r) => r.error)?.error;
  if (runs.every((r) => !r.events)) return { error };
  const go = await allReady;
  const end = go.startAt + go.ms;
  const all = runs
    .flatMap((r, p) =>
      (r.events ?? []).map(([asked, got, released, attempts, releaseDone]) => ({ p, asked, got, released, attempts, releaseDone })),
    )
    .sort((a, b) => a.got - b.got);
  const inWindow = all.filter((e) => e.got <= end);
  const counts = runs.map((_, p) => inWindow.filter((e) => e.p === p).length);
  const handoffs = [];
  let overlaps = 0;
  for (let i = 1; i < all.length; i++) {
    if (all[i].got < all[i - 1].released) overlaps++;
    else if (all[i].p !== all[i - 1].p) handoffs.push(all[i].got - all[i - 1].released);
  }
  const ended = runs.flatMap((r) => r.gaveUp ?? []);
  const gaveUp = ended.filter((g) => g[2] !== 'still waiting');
  const stillWaiting = ended.filter((g) => g[2] === 'still waiting');
  const longestDone = Math.max(0, ...all.map((e) => e.got - e.asked), ...gaveUp.map(([asked, at]) => at - asked));
  const longestOpen = Math.max(0, ...stillWaiting.map(([asked, at]) => at - asked));
  const used = cpuBetween(go.startAt, end);
  return {
    perSecond: (inWindow.length / go.ms) * 1000,
    // CPU ms per acquisition in the window: cores busy over acquisitions per ms.
    cpu:
      used && inWindow.length
        ? { machine: (used.machine * go.ms) / inWindow.length, nodes: (used.nodes * go.ms) / inWindow.length }
        : undefined,
    mostHolders: mostAtOnce(all),
    fairness: Math.min(...counts) / Math.max(1, ...counts),
    longestWait: Math.max(longestDone, longestOpen),
    longestWaitOpen: longestOpen > longestDone, // still waiting when measuring stopped: at least this long
    waitP99: percentile(
      inWindow.map((e) => e.got - e.asked).sort((a, b) => a - b),
      0.99,
    ),
    stillWaiting: stillWaiting.length,
    handoffP50: median(handoffs),
    // One round trip to a quorum under this very load: the release call.
    releaseP50: median(inWindow.map((e) => e.releaseDone - e.released)),
    handoffs: handoffs.length,
    sameProcessAgain: inWindow.length > 1 ? inWindow.slice(1).filter((e, i) => e.p === inWindow[i].p).length / (inWindow.length - 1) : 0,
    counts,
    attempts: inWindow.some((e) => e.attempts !== undefined && e.attempts !== null)
      ? inWindow.reduce((s, e) => s + (e.attempts ?? 0), 0) / inWindow.length
      : undefined,
    gaveUp: gaveUp.length,
    gaveUpFirst: gaveUp[0]?.[2],
    releaseErrors: runs.reduce((s, r) => s + (r.releaseErrors ?? 0), 0),
    overlaps,
    processErrors: runs.filter((r) => r.error).length,
    error,
  };
}

/** Most acquisitions held at once: from `got` to `released` (the release call began), a hand-over at one instant not counted. */
function mostAtOnce(events) {
  const points = events.flatMap((e) => [
    [e.got, 1],
    [e.released, -1],
  ]);
  points.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let inside = 0;
  let most = 0;
  for (const [, d] of points) most = Math.max(most, (inside += d));
  return most;
}

export const CPU_NOTE =
  'CPU ms / acq: CPU time of the whole machine (every process) in the window over the acquisitions in it,\n' +
  'in parentheses the 5 nodes\' share (Linux /proc; "-" elsewhere).';

/** The median round's CPU per acquisition (see `contentionRound`), or undefined where it was not measured. */
export function cpuPerAcquisition(rounds) {
  const measured = rounds.filter((r) => r.cpu);
  if (!measured.length) return undefined;
  return { machine: median(measured.map((r) => r.cpu.machine)), nodes: median(measured.map((r) => r.cpu.nodes)) };
}

export const showCpu = (cpu) => (cpu ? `${fmt(cpu.machine, 2)} (${fmt(cpu.nodes, 2)})` : '-');
