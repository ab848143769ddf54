import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';
import {
  check,
  checkPermits,
  type Failure,
  type PermitVerdict,
  type Section,
  type StoreEntry,
  type Verdict,
  type Window,
} from './checker.js';
import { TcpProxy } from './tcp-proxy.js';
import { checkedCommand } from '../support/resp.js';
import { until } from '../support/until.js';

/**
 * Fault-injection suite (`npm run test:faults`): WORKERS separate Node
 * processes (worker.mjs, on the built library in dist/esm) take one lock over
 * 5 real redis-server nodes and, inside it, do a fenced read-modify-write on a
 * separate store node (fenced-store.mjs), while a fault is injected on a
 * fixed schedule. checker.ts then looks for real-time overlaps of critical
 * sections and for anything the fenced store accepted that it should not have.
 *
 * Lock nodes run with `persistence: true` (AOF, appendfsync always): "restart
 * with data" keeps every acknowledged key; "restart empty" wipes the data dir.
 */
const here = dirname(fileURLToPath(import.meta.url));
const WORKER = join(here, 'worker.mjs');
const BUILT = join(here, '..', '..', 'dist', 'esm', 'index.js');
const WORKERS = 4;
const TTL = 500;
const HOLD = { holdMin: 5, holdMax: 20 };
/** Client options of every worker (a scenario may add to them). */
const REDLOCK = { retryDelay: 20, retryJitter: 20 };
/** Per-call options: retry for up to 2 s, then report the error. */
const ACQUIRE = { retryCount: 100_000, acquireTimeout: 2000 };

// ============================================================================
// RESTART GUARD: scenario 3c runs scenario 3b again with the library's
// `restartGuard` option set to this many ms (at least the ttl: a restarted
// node's vote is not counted until every lock it may have lost has expired).
// Set FAULTS_RESTART_GUARD=0 to run 3c unguarded, or change the value here.
// ============================================================================
const RESTART_GUARD_MS = Number(process.env.FAULTS_RESTART_GUARD ?? 2 * TTL);

// The host's monotonic clock (ms), the one the workers stamp their histories with.
// Not `performance.timeOrigin + performance.now()`: a process's time origin can be
// off by milliseconds (one worker's was 8.8-12.6 ms ahead of the others for a whole
// run, read from its sections' start minus their tokens' clock), enough to show
// sections that followed each other as overlapping.
const now = () => Number(process.hrtime.bigint()) / 1e6;
const dir = mkdtempSync(join(tmpdir(), 'redlock-faults-'));

let fleet: RedisFleet; // the 5 lock nodes
let storeNode: RedisFleet; // the fenced store's own redis-server, not a lock node
let storeClient: Redis;
const children = new Map<number, ChildProcess>();
const proxies: TcpProxy[] = [];

interface Row {
  fault: string;
  trials: number;
  verdict: Verdict;
  notes: string[];
}
const rows: Row[] = [];

// ----------------------------------------------------------------------------
// Workers
// ----------------------------------------------------------------------------

interface Worker {
  readonly id: number;
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
  /** Resolves with the worker's next message of this type (undefined after `timeoutMs`). */
  next(type: string, timeoutMs: number): Promise<Record<string, unknown> | undefined>;
  /** Drops the unread messages of this type. */
  drop(type: string): void;
  send(message: object): void;
}

function spawnWorker(id: number, config: object): Worker {
  const child = spawn(process.execPath, [WORKER, JSON.stringify({ id, ...config })], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  children.set(child.pid!, child);
  const waiters = new Map<string, ((m: Record<string, unknown> | undefined) => void)[]>();
  const backlog: Record<string, unknown>[] = [];
  child.on('message', (m: Record<string, unknown>) => {
    const queue = waiters.get(m.type as string);
    if (queue?.length) queue.shift()!(m);
    else if (m.type !== 'section') backlog.push(m); // one per section: counted by run(), never awaited
  });
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code, signal) => {
      children.delete(child.pid!);
      resolve(code ?? (signal ? -1 : null));
    }),
  );
  return {
    id,
    child,
    exited,
    send: (message) => {
      if (child.connected) child.send(message);
    },
    drop: (type) => {
      for (let i = backlog.length - 1; i >= 0; i--) if (backlog[i]!.type === type) backlog.splice(i, 1);
    },
    next: (type, timeoutMs) => {
      const i = backlog.findIndex((m) => m.type === type);
      if (i >= 0) return Promise.resolve(backlog.splice(i, 1)[0]);
      return new Promise((resolve) => {
        const timer = setTimeout(() => {
          const queue = waiters.get(type) ?? [];
          queue.splice(queue.indexOf(done), 1);
          resolve(undefined);
        }, timeoutMs);
        const done = (m: Record<string, unknown> | undefined) => {
          clearTimeout(timer);
          resolve(m);
        };
        waiters.set(type, [...(waiters.get(type) ?? []), done]);
      });
    },
  };
}

/** SIGKILL every worker still alive, by the PIDs we started (a stopped process dies too). */
function killWorkers(): void {
  for (const [pid, child] of children) {
    try {
      if (child.exitCode === null && child.signalCode === null) process.kill(pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
  children.clear();
}
process.on('exit', killWorkers);

// ----------------------------------------------------------------------------
// Scenarios
// ----------------------------------------------------------------------------

interface Context {
  readonly workers: readonly Worker[];
  /** Sleeps until `ms` after the workers were told to run. */
  at(ms: number): Promise<void>;
  /** Marks a fault active from now; call the result when it is over. Counts one trial. */
  begin(): () => void;
  note(text: string): void;
  /** Per worker, the critical sections it began after `from` (as reported so far). */
  sectionsSince(from: number): number[];
}

interface Scenario {
  durationMs: number;
  workers?: number;
  nodesFor?: (id: number) => string[];
  redlock?: Record<string, unknown>;
  /** Per-worker acquire options beside ACQUIRE (`limit`, `mode`). */
  acquireFor?: (id: number) => Record<string, unknown>;
  /** false: no fenced store access (permits are shared: the store's counter is for exclusive holders). */
  store?: false;
  schedule?: (ctx: Context) => Promise<void>;
}

interface Outcome {
  verdict: Verdict;
  /** Holders at once and writer conflicts (meaningful for permit scenarios). */
  permits: PermitVerdict;
  sections: Section[];
  failures: Failure[];
  windows: Window[];
  woke: Record<string, unknown>[];
  exitCodes: (number | null | 'timeout')[];
  /** The row's notes (a test may add to them). */
  notes: string[];
}

let scenarioCount = 0;

async function run(fault: string, scenario: Scenario): Promise<Outcome> {
  const n = ++scenarioCount;
  const count = scenario.workers ?? WORKERS;
  const storePrefix = `faults:${n}:`;
  const histories = Array.from({ length: count }, (_, id) => join(dir, `s${n}-w${id}.jsonl`));
  const workers = histories.map((history, id) => {
    writeFileSync(history, '');
    return spawnWorker(id, {
      nodes: scenario.nodesFor?.(id) ?? fleet.urls,
      storeUrl: storeNode.urls[0],
      storePrefix,
      resource: `faults-${n}`,
      ttl: TTL,
      ...HOLD,
      history,
      redlock: { ...REDLOCK, ...scenario.redlock },
      acquire: { ...ACQUIRE, ...scenario.acquireFor?.(id) },
      store: scenario.store,
      maxRunMs: scenario.durationMs + 30_000,
    });
  });
  // Generous: on a loaded 2-core machine, 4 Node processes loading the library can take seconds.
  const ready = await Promise.all(workers.map((w) => w.next('ready', 30_000)));
  if (ready.some((m) => !m)) throw new Error(`${fault}: a worker did not start within 30 s`);

  const windows: { from: number; to: number }[] = [];
  const notes: string[] = [];
  const woke: Record<string, unknown>[] = [];
  const starts: number[][] = workers.map(() => []);
  for (const w of workers) {
    w.child.on('message', (m: Record<string, unknown>) => {
      if (m.type === 'woke') woke.push({ w: w.id, ...m });
      if (m.type === 'section') starts[w.id]!.push(m.start as number);
    });
  }
  const runFrom = now();
  for (const w of workers) w.send({ type: 'run' });
  const ctx: Context = {
    workers,
    at: async (ms) => {
      const wait = runFrom + ms - now();
      if (wait > 0) await sleep(wait);
    },
    begin: () => {
      const window: { from: number; to: number } = { from: now(), to: Infinity };
      windows.push(window);
      return () => void (window.to = now());
    },
    note: (text) => void notes.push(text),
    sectionsSince: (from) => starts.map((list) => list.filter((t) => t > from).length),
  };
  try {
    await scenario.schedule?.(ctx);
    await ctx.at(scenario.durationMs);
  } finally {
    for (const w of workers) w.send({ type: 'stop' });
  }
  const runTo = now();
  for (const window of windows) if (window.to === Infinity) window.to = runTo;
  const exitCodes = await Promise.all(workers.map((w) => within(w.exited, 10_000)));
  killWorkers();

  const sections: Section[] = [];
  const failures: Failure[] = [];
  const stalled: string[] = [];
  const guardChecks: number[] = []; // excludedFor of each node-restarted event (restart guard on)
  for (const history of histories) {
    for (const line of readFileSync(history, 'utf8').split('\n')) {
      if (!line) continue;
      const entry = JSON.parse(line) as Record<string, unknown>;
      if (entry.fail !== undefined) failures.push(entry as unknown as Failure);
      else if (entry.start !== undefined) sections.push(entry as unknown as Section);
      if (entry.event === 'node-restarted') guardChecks.push(entry.excludedFor as number);
      const summary = entry.summary as { stalled?: number[] } | undefined;
      if (summary?.stalled?.length) stalled.push(`w${entry.w as number}:n${summary.stalled.join('+n')}`);
    }
  }
  const store: StoreEntry[] = (await storeClient.lrange(`${storePrefix}log`, 0, -1)).map((line) => {
    const [seq, token, who, op, outcome] = line.split(' ');
    return { seq: Number(seq), token: Number(token), who: who!, op: op!, ok: outcome === 'ok' };
  });
  const counter = Number((await storeClient.get(`${storePrefix}data:counter`)) ?? 0);
  const verdict = check({ sections, failures, store, counter, windows, runFrom, runTo });

  if (verdict.overrunOverlaps > 0) {
    notes.push(
      `${verdict.overrunOverlaps} of the overlaps began after the earlier holder's validity had ended ` +
        `(it overran its lock by up to ${verdict.longestOverrun} ms)`,
    );
  }
  if (guardChecks.length > 0) {
    const short = guardChecks.filter((ms) => ms < TTL).length;
    notes.push(
      `restart guard: ${guardChecks.length} restarts noticed, excluded for less than the ttl in ${short} (${guardChecks.join(',')} ms)`,
    );
  }
  const codes = Object.entries(verdict.failures).map(([code, k]) => `${k} ${code}`);
  if (codes.length > 0) {
    // The nodes' answers to the last failed attempt say why (for a failure nobody expected).
    const last = failures.at(-1)!;
    notes.push(`failed acquires: ${codes.join(', ')} (longest ${verdict.longestFailure} ms; last: ${last.nodes?.join(' ') ?? '?'})`);
  }
  if (verdict.tokenOrderViolations > 0) notes.push(`${verdict.tokenOrderViolations} token-order violations`);
  if (verdict.lostUpdates !== 0) notes.push(`${verdict.lostUpdates} lost updates`);
  const errors = sections.filter((s) => s.store.startsWith('error')).length;
  if (errors > 0) notes.push(`${errors} store errors`);
  if (exitCodes.some((c) => c !== 0)) notes.push(`worker exits: ${exitCodes.join(',')}`);
  // Nodes a worker's client still counted as hung when it stopped, all faults healed (see scenario 8).
  if (stalled.length > 0) notes.push(`nodes still 'stalled' at the end: ${stalled.join(' ')}`);
  // The sections a release handed over, checked like the others.
  notes.push(`${sections.filter((s) => s.handedOver).length} of ${sections.length} sections handed over by a release`);
  const permits = checkPermits(sections);
  if (scenario.store === false) {
    notes.unshift(
      `holders at once: at most ${permits.maxHolders} within validity (${permits.maxHoldersRaw} counting overruns); writer conflicts: ${permits.writerConflicts}`,
    );
  }
  rows.push({ fault, trials: windows.length, verdict, notes });
  if (process.env.FAULTS_DEBUG) process.stdout.write(`${fault} (s${n}): ${JSON.stringify({ verdict, permits, runFrom, windows })}\n`);
  return { verdict, permits, sections, failures, windows, woke, exitCodes, notes };
}

/** `promise`'s value, or 'timeout' after `ms` (the timer is cleared either way). */
async function within<T>(promise: Promise<T>, ms: number): Promise<T | 'timeout'> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise, new Promise<'timeout'>((resolve) => (timer = setTimeout(resolve, ms, 'timeout')))]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * What every scenario but 4 (a paused holder) and 7 (the broken configuration)
 * must keep: no overlap in real time. The one kind tolerated is a holder that
 * overran its own lock (it was still in its section after the validity the
 * library gave it had ended, and the next holder came after that): on a
 * machine loaded enough to starve a process for ~ttl, that is scenario 4
 * happening by itself, not a second grant of a valid lock. It is counted in
 * the notes, and the fenced store must still refuse its late writes.
 */
function expectSafe(o: Outcome): void {
  const v = o.verdict;
  expect(o.exitCodes).toEqual(o.exitCodes.map(() => 0));
  expect(v.acquisitions).toBeGreaterThan(20);
  expect(v.overlaps - v.overrunOverlaps).toBe(0);
  if (process.env.FAULTS_STRICT) expect(v.overlaps).toBe(0);
  expectFencedStoreSafe(o);
}

/** The fenced store accepted nothing it should have refused, whatever the lock did. */
function expectFencedStoreSafe(o: Outcome): void {
  const v = o.verdict;
  expect(v.storeRegressions).toBe(0);
  expect(v.tokenCollisions).toBe(0);
  expect(v.tokenOrderViolations).toBe(0);
  expect(v.lostUpdates).toBe(0);
  expect(o.sections.filter((s) => s.store.startsWith('error'))).toEqual([]);
}

/**
 * Asks `worker` to stop in its next critical section, between its fenced read
 * and write; resolves with its `inside` message ({ token, validity, at }), or
 * undefined (and the request withdrawn) if it did not get the lock in time.
 */
async function holdInside(worker: Worker, timeoutMs = 3000): Promise<{ token: number; validity: number; at: number } | undefined> {
  worker.drop('inside');
  worker.send({ type: 'arm' });
  const inside = await worker.next('inside', timeoutMs);
  if (!inside) worker.send({ type: 'disarm' });
  return inside as { token: number; validity: number; at: number } | undefined;
}

/**
 * Waits until `lead` ms before a wall-clock second boundary. A node started
 * just before the boundary reports `uptime_in_seconds:1` a few ms later
 * (Redis subtracts whole-second timestamps), the worst case for anything that
 * trusts that uptime.
 */
async function beforeSecondBoundary(lead: number): Promise<void> {
  const into = Date.now() % 1000;
  const target = (((1000 - lead) % 1000) + 1000) % 1000;
  await sleep((target - into + 1000) % 1000);
}

const sleepUntil = async (t: number) => {
  const wait = t - now();
  if (wait > 0) await sleep(wait);
};

beforeAll(async () => {
  if (!existsSync(BUILT)) throw new Error(`${BUILT} is missing: run \`npm run build\` first (npm run test:faults does)`);
  [fleet, storeNode] = await Promise.all([startFleet(5, { persistence: true }), startFleet(1)]);
  storeClient = new Redis(storeNode.urls[0]!);
});

afterEach(async () => {
  killWorkers();
  await Promise.all(proxies.splice(0).map((p) => p.stop()));
  for (let i = 0; i < fleet.size; i++) {
    if (fleet.nodes[i]!.paused) await fleet.resume(i);
    if (!fleet.nodes[i]!.running) await fleet.restart(i, { keepData: true });
  }
});

afterAll(async () => {
  killWorkers();
  await Promise.all(proxies.splice(0).map((p) => p.stop()));
  storeClient?.disconnect();
  await Promise.all([fleet?.stop(), storeNode?.stop()]);
  if (process.env.FAULTS_DEBUG) process.stdout.write(`histories kept in ${dir}\n`);
  else rmSync(dir, { recursive: true, force: true });
  printTable();
});

function printTable(): void {
  const header = [
    'fault',
    'trials',
    'acquisitions',
    'overlaps found',
    'stale writes rejected',
    'longest unavailability (ms)',
    'regressions accepted',
    'notes',
  ];
  const lines = rows.map((r) =>
    [
      r.fault,
      r.trials,
      r.verdict.acquisitions,
      r.verdict.overlaps,
      r.verdict.staleRejected,
      r.verdict.longestUnavailability,
      r.verdict.storeRegressions + r.verdict.tokenCollisions,
      r.notes.join('; '),
    ].map(String),
  );
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const fmt = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  process.stdout.write(
    `\nFault suite: ${WORKERS} worker processes, 5 lock nodes, ttl ${TTL} ms, hold ${HOLD.holdMin}-${HOLD.holdMax} ms ` +
      `(trials = fault injections; overlaps = pairs of critical sections overlapping in real time; ` +
      `regressions accepted = store accesses with a lower or another holder's equal token that the store accepted)\n` +
      [fmt(header), fmt(widths.map((w) => '-'.repeat(w))), ...lines.map(fmt)].join('\n') +
      '\n\n',
  );
}

// ----------------------------------------------------------------------------

/** Fault 1: a minority (2 of 5) killed -9 three times, each restarted with its data after 600 ms. */
async function killMinority(ctx: Context): Promise<void> {
  const pairs = [
    [3, 4],
    [0, 2],
    [1, 4],
  ];
  for (const [k, pair] of pairs.entries()) {
    await ctx.at(700 + k * 1300);
    const end = ctx.begin();
    await Promise.all(pair.map((i) => fleet.kill(i)));
    await sleep(600);
    await Promise.all(pair.map((i) => fleet.restart(i, { keepData: true })));
    end();
  }
}

/** Fault 2: a minority (2 of 5) paused with SIGSTOP for 1 s, twice. */
async function pauseMinority(ctx: Context): Promise<void> {
  const pairs = [
    [3, 4],
    [0, 1],
  ];
  for (const [k, pair] of pairs.entries()) {
    await ctx.at(700 + k * 1800);
    const end = ctx.begin();
    await Promise.all(pair.map((i) => fleet.pause(i)));
    await sleep(1000);
    await Promise.all(pair.map((i) => fleet.resume(i)));
    end();
  }
}

/**
 * Fault 2b: a HUNG node that is then killed and restarted (what a supervisor
 * does to a stuck server), then `others` hang for at least 1 s so that a quorum
 * needs the restarted node. They stay hung until `enough` holds of the sections
 * each worker began meanwhile (at most PHASE2_CAP_MS): a fixed second was too
 * short on a loaded CI machine (0 permits in it once in six runs, the row alone
 * passing every time). `phase2` is filled in with when they hung.
 */
function hungThenNeeded(
  others: readonly number[],
  enough: (perWorker: number[]) => boolean,
): { phase2: { from: number; to: number }; schedule: (ctx: Context) => Promise<void> } {
  const phase2 = { from: 0, to: 0 };
  const schedule = async (ctx: Context) => {
    await ctx.at(700);
    let end = ctx.begin();
    await fleet.pause(4);
    await sleep(600);
    await fleet.kill(4);
    await fleet.restart(4, { keepData: true });
    const back = now();
    end();
    // Node 4 back for more than a second before the others hang, counted from when it answers again,
    // and every client reconnected to it (as many connections as node 3 has): in loaded CI runs the
    // read-write row got 0/0/1/1/0/0 permits in phase 2 on KeyDB, and 1/0/1/1/1/0 on Valkey with
    // the second alone, its workers having reconnected (ioredis backs off between tries) and
    // checked node 4 only once it was over a second old (restart guard exclusions of 0 ms), so
    // after phase 2 had begun.
    await ctx.at(2500);
    const settle = back + 1200 - now();
    if (settle > 0) await sleep(settle);
    await until(async () => (await connectedClients(4)) >= (await connectedClients(3)), 'every client reconnected to node 4', 15_000, 50);
    end = ctx.begin();
    phase2.from = now();
    ctx.note(`node 4 answered ${Math.round(phase2.from - back)} ms before phase 2, every client reconnected`);
    await Promise.all(others.map((i) => fleet.pause(i)));
    await sleep(1000);
    // The in-memory tally of the workers' 'section' messages, read every 20 ms.
    while (!enough(ctx.sectionsSince(phase2.from)) && now() - phase2.from < PHASE2_CAP_MS) await sleep(20);
    await Promise.all(others.map((i) => fleet.resume(i)));
    phase2.to = now();
    ctx.note(`node(s) ${others.join('+')} hung for ${Math.round(phase2.to - phase2.from)} ms`);
    end();
  };
  return { phase2, schedule };
}
/** How long 2b's second phase may wait for the sections it needs before the row fails. */
const PHASE2_CAP_MS = 10_000;
const everyWorker = (perWorker: number[]) => perWorker.every((k) => k > 0);
const anyWorker = (perWorker: number[]) => perWorker.some((k) => k > 0);

/** The clients connected to lock node `i` (INFO clients; this query's own connection included). */
async function connectedClients(i: number): Promise<number> {
  const info = String(await checkedCommand(fleet.node(i).port, ['INFO', 'clients']));
  return Number(/connected_clients:(\d+)/.exec(info)![1]);
}

/** Sections each worker began inside `window`. */
const perWorkerIn = (o: Outcome, window: { from: number; to: number }) =>
  o.exitCodes.map((_, id) => o.sections.filter((s) => s.w === id && s.start > window.from && s.start < window.to).length);

/** Fault 3a: nodes 0, 1, 2 in turn killed -9 and restarted empty (their data dir wiped). */
async function restartEmptyInTurn(ctx: Context): Promise<void> {
  for (const k of [0, 1, 2]) {
    await ctx.at(700 + k * 1200);
    const end = ctx.begin();
    await fleet.kill(k);
    await fleet.restart(k, { keepData: false });
    end();
  }
}

/**
 * Fault 3b: who reaches which nodes (the other paths are blackholed), and which
 * workers the runner keeps inside their sections while node 0 restarts empty.
 */
interface Partition {
  /** The nodes a worker reaches; undefined: all five. */
  reach(id: number): readonly number[] | undefined;
  held: readonly number[];
}

/**
 * Mutex and read-write lock: worker 0 reaches {0,1,2}, worker 1 {0,3,4}; node 0,
 * the only node both majorities share, restarts empty while worker 0 is inside:
 * {0,3,4} is then a quorum for worker 1.
 */
const TWO_MAJORITIES: Partition = { reach: (id) => (id === 0 ? [0, 1, 2] : id === 1 ? [0, 3, 4] : undefined), held: [0] };

/**
 * Semaphore of limit 3 (a permit: a majority on one slot): workers 0-2 are kept
 * inside, each on a majority through node 0 ({0,1,2}, {0,3,4}, {0,1,3}): node 0
 * has its 3 slots taken. Worker 3 reaches {0,2,4}, where nodes 2 and 4 have one
 * slot taken each (workers 0 and 1's): once node 0 comes back empty, a slot free
 * on both is free on a majority, a 4th permit.
 */
const REACH_OF_FOUR = [
  [0, 1, 2],
  [0, 3, 4],
  [0, 1, 3],
  [0, 2, 4],
];
const FOUR_MAJORITIES: Partition = { reach: (id) => REACH_OF_FOUR[id], held: [0, 1, 2] };

/**
 * The hazard of a node restarted without its data, made deterministic: the
 * `partition`'s held workers are kept inside their sections (until 120 ms before
 * the validity the last of them entered with ends) while node 0 is killed and
 * restarted empty, three times.
 */
async function asymmetric(partition: Partition, restartGuard: number | 'auto'): Promise<Scenario> {
  const cut = await Promise.all([0, 1, 2, 3, 4].map(() => TcpProxy.blackhole()));
  proxies.push(...cut);
  let restartMs = 40;
  const path = (i: number, reachable: boolean) => (reachable ? fleet.urls[i]! : `redis://127.0.0.1:${cut[i]!.port}`);
  return {
    durationMs: 4800,
    nodesFor: (id) => {
      const reach = partition.reach(id);
      return reach ? [0, 1, 2, 3, 4].map((i) => path(i, reach.includes(i))) : fleet.urls;
    },
    redlock: { restartGuard },
    schedule: async (ctx) => {
      for (const t of [800, 2200, 3600]) {
        await ctx.at(t);
        const inside = await Promise.all(partition.held.map((id) => holdInside(ctx.workers[id]!)));
        if (inside.some((m) => !m)) {
          ctx.note(`held workers did not all get in at ${t} ms`);
          for (const id of partition.held) ctx.workers[id]!.send({ type: 'go' });
          continue;
        }
        // Restarted so that it is up again ~30 ms before a wall-clock second ends (the
        // restart took `restartMs` last time): the worst case for an uptime-based guard.
        await beforeSecondBoundary(restartMs + 30);
        const end = ctx.begin();
        const restartFrom = performance.now();
        await fleet.kill(0);
        await fleet.restart(0, { keepData: false });
        restartMs = Math.round(performance.now() - restartFrom);
        // Kept inside until shortly before their validity ends: still valid holders when they go on.
        await sleepUntil(Math.max(...inside.map((m) => m!.at + m!.validity)) - 120);
        for (const id of partition.held) ctx.workers[id]!.send({ type: 'go' });
        end();
      }
    },
  };
}

/** Fault 4: worker 0 paused (SIGSTOP) for 2 x ttl inside its section, twice. */
async function pauseHolder(ctx: Context): Promise<void> {
  for (const t of [800, 2600]) {
    await ctx.at(t);
    const holder = ctx.workers[0]!;
    const inside = await holdInside(holder);
    if (!inside) {
      ctx.note(`worker 0 did not get the lock at ${t} ms`);
      continue;
    }
    const end = ctx.begin();
    process.kill(holder.child.pid!, 'SIGSTOP');
    await sleep(2 * TTL);
    holder.send({ type: 'go' }); // queued: the first thing it sees on waking
    process.kill(holder.child.pid!, 'SIGCONT');
    end();
  }
}

/** The paused holder woke without its lock, and its signal had fired. */
function expectPausedHolderWarned(o: Outcome): Section[] {
  const held = o.sections.filter((s) => s.held);
  expect(held).toHaveLength(2);
  for (const s of held) {
    expect(s.held!.heldOnWake).toBe(false); // its validity had run out while it was stopped
    expect(s.held!.abortedAfterWrite).toBe(true); // and its signal fired
  }
  expect(o.woke).toHaveLength(2);
  return held;
}

/** Fault 5: 30-80 ms per direction on the path to nodes 3 and 4, for the whole run. */
async function slowMinority(): Promise<Scenario> {
  const slow = await Promise.all([3, 4].map((i) => TcpProxy.latency(fleet.nodes[i]!.port, 30, 80)));
  proxies.push(...slow);
  const urls = fleet.urls.map((url, i) => (i >= 3 ? `redis://127.0.0.1:${slow[i - 3]!.port}` : url));
  return {
    durationMs: 4000,
    nodesFor: () => urls,
    // A per-node timeout the slow nodes can meet, so that they take part in split votes.
    redlock: { nodeTimeout: 200 },
    schedule: async (ctx) => void ctx.begin(), // active for the whole run
  };
}

/** Fault 6: a majority killed -9 twice (3 of 5, 1.2 s then 0.8 s), restarted with data. `restarted` gets when. */
function majorityOutage(restarted: number[]): (ctx: Context) => Promise<void> {
  const outages = [
    { at: 700, nodes: [0, 1, 2], down: 1200 },
    { at: 3000, nodes: [2, 3, 4], down: 800 },
  ];
  return async (ctx) => {
    for (const outage of outages) {
      await ctx.at(outage.at);
      const end = ctx.begin();
      await Promise.all(outage.nodes.map((i) => fleet.kill(i)));
      await sleep(outage.down);
      await Promise.all(outage.nodes.map((i) => fleet.restart(i, { keepData: true })));
      end();
      restarted.push(now());
    }
  };
}
/** ioredis backs off up to 2 s between reconnects: leave more than that after the last restart. */
const OUTAGE_MS = 6500;

/**
 * Every acquire that gave up while a majority was down said so with
 * QUORUM_UNREACHABLE, none took much longer than its acquireTimeout, and every
 * worker process (the same ones, never restarted) got in again after each
 * restart (with `everyWorker` false: some worker did, all of them being reported).
 */
function expectOutageBounded(o: Outcome, restarted: readonly number[], everyWorker = true): void {
  const after = restarted.map((t) =>
    o.exitCodes.map((_, id) => (o.sections.find((s) => s.w === id && s.start > t)?.start ?? Infinity) - t),
  );
  const recovery = after.map((ms) => (everyWorker ? Math.max(...ms) : Math.min(...ms)));
  const show = (ms: number) => (ms === Infinity ? 'never' : `${Math.round(ms)} ms`);
  o.notes.unshift(
    `every worker locked again ${after.map((ms) => show(Math.max(...ms))).join(' / ')} after the restarts` +
      (everyWorker ? '' : ` (the first ${after.map((ms) => show(Math.min(...ms))).join(' / ')})`),
  );
  expect(o.verdict.failures.QUORUM_UNREACHABLE ?? 0).toBeGreaterThan(0);
  const whileDown = o.failures.filter((f) => o.windows.some((w) => f.at >= w.from && f.at <= w.to));
  expect([...new Set(whileDown.map((f) => f.fail))]).toEqual(['QUORUM_UNREACHABLE']);
  // Bounded: no acquire call took longer than its 2 s acquireTimeout (plus scheduling slack).
  expect(o.verdict.longestFailure).toBeLessThan(ACQUIRE.acquireTimeout + 500);
  for (const ms of recovery) expect(ms).toBeLessThan(Infinity);
}

describe('fault suite', () => {
  it('0. no fault (baseline)', async () => {
    const o = await run('0. none', { durationMs: 2500 });
    expectSafe(o);
    // Contending workers wait: releases hand the lock over, and the checker saw those sections too.
    expect(o.sections.filter((s) => s.handedOver).length).toBeGreaterThan(0);
  });

  it('1. a minority (2 of 5) killed -9, restarted with its data (AOF always)', async () => {
    const o = await run('1. 2 of 5 kill -9, 600 ms, restart with data', { durationMs: 4500, schedule: killMinority });
    expectSafe(o);
  });

  it('2. a minority (2 of 5) paused with SIGSTOP far longer than the per-node timeout, then resumed', async () => {
    const o = await run('2. 2 of 5 SIGSTOP 1 s (node timeout 50 ms)', { durationMs: 4500, schedule: pauseMinority });
    expectSafe(o);
  });

  /**
   * 2b, not in the original list: while node 4 is stopped, rounds time out on
   * it and every client marks it stalled with commands in flight; the kill
   * closes those connections. Later two other nodes hang for 1 s, so a quorum
   * needs the restarted node: every worker must still get the lock.
   * The trap: with `autoResendUnfulfilledCommands: false`, ioredis forgets the
   * commands that were in flight when the connection closed without ever
   * settling them, so a count of unanswered commands never drains.
   */
  it('2b. a hung node killed -9 and restarted is used again (later it is needed for a quorum)', async () => {
    const fault = hungThenNeeded([0, 1], everyWorker);
    const o = await run('2b. 1 of 5 SIGSTOP 600 ms, kill -9, restart with data; then 2 others SIGSTOP >= 1 s', {
      durationMs: 4200,
      schedule: fault.schedule,
    });
    const during = perWorkerIn(o, fault.phase2);
    o.notes.unshift(`locks per worker while nodes 0+1 hung (needs node 4): ${during.join('/')}`);
    expectSafe(o);
    for (const k of during) expect(k).toBeGreaterThan(0);
  });

  describe('3. a node restarted WITHOUT its data inside the ttl', () => {
    it('3a. every worker reaches every node: no guard', async () => {
      const o = await run('3a. 1 of 5 kill -9 + empty restart, no guard', {
        durationMs: 4300,
        redlock: { restartGuard: 0 },
        schedule: restartEmptyInTurn,
      });
      // Every holder has its key on all 5 nodes here, so losing one node's keys
      // leaves 4: no second quorum. Recorded, and asserted like the others.
      expectSafe(o);
    });

    it('3b. asymmetric partition, holder inside its ttl: no guard (fencing must catch what the lock lets through)', async () => {
      const o = await run('3b. 3a + asymmetric partition, holder kept ~400 ms, no guard', await asymmetric(TWO_MAJORITIES, 0));
      const held = o.sections.filter((s) => s.held);
      const rejected = held.filter((s) => s.store === 'stale').length;
      o.notes.unshift(
        `holder kept inside ${held.length}x: its write rejected ${rejected}x, still valid at wake ${held.filter((s) => s.held!.heldOnWake).length}x`,
      );
      // Whatever the lock did, the store accepted nothing stale.
      expect(o.exitCodes).toEqual(o.exitCodes.map(() => 0));
      expectFencedStoreSafe(o);
      // Where a newer holder's whole section (its write included) fell while the held worker
      // was kept inside, the held worker's write came after it: that is the one the store
      // refused. (Not every overlap leaves a stale write: overlapping sections may write in
      // token order, which the store rightly accepts.)
      for (const h of held) {
        const overtaken = o.sections.some((t) => t.token > h.token && t.store === 'ok' && t.end < h.held!.wokeAt);
        if (overtaken) expect(h.store).toBe('stale');
      }
    });

    it("3d. same with the default restart guard ('auto': the longest ttl the client used)", async () => {
      const o = await run("3d. 3b with the default restartGuard 'auto'", await asymmetric(TWO_MAJORITIES, 'auto'));
      const held = o.sections.filter((s) => s.held);
      o.notes.unshift(`holder kept inside ${held.length}x: its write ${held.map((s) => s.store).join('/')}`);
      expect(held.length).toBeGreaterThan(0);
      expectSafe(o);
    });

    it(`3c. same with the restart guard on (restartGuard: ${RESTART_GUARD_MS} ms)`, async () => {
      const o = await run(`3c. 3b with restartGuard ${RESTART_GUARD_MS} ms`, await asymmetric(TWO_MAJORITIES, RESTART_GUARD_MS));
      const held = o.sections.filter((s) => s.held);
      o.notes.unshift(`holder kept inside ${held.length}x: its write ${held.map((s) => s.store).join('/')}`);
      expect(held.length).toBeGreaterThan(0);
      if (RESTART_GUARD_MS >= TTL) expectSafe(o);
      else expectFencedStoreSafe(o);
    });
  });

  it('4. a holder PROCESS paused (SIGSTOP) for 2 x ttl inside its critical section', async () => {
    const o = await run('4. holder process SIGSTOP 2 x ttl', { durationMs: 4500, schedule: pauseHolder });
    const held = o.sections.filter((s) => s.held);
    const fired = held.filter((s) => s.held!.abortedAfterWrite).length;
    o.notes.unshift(
      `paused holder: write rejected ${held.filter((s) => s.store === 'stale').length}/${held.length}, ` +
        `signal fired ${fired}/${held.length} (already aborted at wake ${held.filter((s) => s.held!.abortedOnWake).length}/${held.length}), ` +
        `overlapping sections ${o.verdict.overlapping}`,
    );
    // Real-time overlap is expected here (the Redlock critique's pause): reported, not failed on,
    // as long as every overlap is the paused holder overrunning its lock.
    expect(o.exitCodes).toEqual(o.exitCodes.map(() => 0));
    expect(o.verdict.overlaps - o.verdict.overrunOverlaps).toBe(0);
    for (const s of expectPausedHolderWarned(o)) expect(s.store).toBe('stale'); // the fenced store refused the stale write
    expectFencedStoreSafe(o);
  });

  it('5. 30-80 ms added per direction on the path to 2 of 5 nodes (TCP proxy)', async () => {
    const o = await run('5. 2 of 5 behind a 30-80 ms/direction proxy (node timeout 200 ms)', await slowMinority());
    expectSafe(o);
  });

  it('6. a majority (3 of 5) killed: QUORUM_UNREACHABLE within bounded time, then locks work again in the same processes', async () => {
    const restarted: number[] = [];
    const o = await run('6. 3 of 5 kill -9, 1.2 s then 0.8 s, restart with data', {
      durationMs: OUTAGE_MS,
      schedule: majorityOutage(restarted),
    });
    expectSafe(o);
    expectOutageBounded(o, restarted);
  });

  it('7. the checker has teeth: a broken configuration (each worker alone on its own node) is caught', async () => {
    const o = await run('7. BROKEN: each worker a different single node (quorum 1 of 1)', {
      durationMs: 2500,
      nodesFor: (id) => [fleet.urls[id]!],
      schedule: async (ctx) => void ctx.begin(), // broken for the whole run
    });
    expect(o.verdict.overlaps).toBeGreaterThan(0);
  });
});

/**
 * Permits: 6 workers on the same 5 nodes, a semaphore of limit 3 (or a
 * read-write lock: workers 0 and 1 write, the others read), under every fault
 * the mutex rows run under, with the same schedules. The checker counts the
 * sections inside at once, each only while its permit was valid (a holder that
 * overran its validity is the paused-holder case, not a second grant). Where
 * the safety argument's assumptions hold, a row asserts at most 3 holders (no
 * writer beside anyone); row 3b breaks one on purpose (a node loses its permits
 * inside the ttl, no restart guard) and only reports. A permit needs a majority
 * (a semaphore's, on one slot), so it tolerates two nodes out, as a lock does:
 * where a fault takes out more, its row asserts the bound and that some permit
 * was granted, not the pace. The BROKEN rows put each worker alone on one node.
 */
describe('fault suite: semaphores and read-write locks', () => {
  const PERMIT_WORKERS = 6;
  const LIMIT = 3;

  interface Kind {
    /** The row's prefix, e.g. 'S. semaphore limit 3'. */
    readonly label: string;
    readonly scenario: Pick<Scenario, 'workers' | 'store' | 'acquireFor'>;
    /** What "at most n holders" means for this kind. */
    expectBound(o: Outcome): void;
    /** That the bound was not met by refusing: several holders at once, or writers not starved. */
    expectLive(o: Outcome): void;
    /** How many of the 5 nodes may be down or slow with permits still granted at the usual pace (5 - quorum). */
    readonly tolerates: number;
    /** The nodes hung in 2b's second phase: enough that a quorum needs the restarted node 4. */
    readonly hungInPhase2: readonly number[];
    /** Whether 2b asserts that every worker got in while they hung (else: that anyone did). */
    readonly everyWorkerInPhase2: boolean;
    /** 3b's partition: held permits whose quorums share only node 0. */
    readonly partition: Partition;
  }
  const kinds: Record<'S' | 'RW', Kind> = {
    S: {
      label: `S. semaphore limit ${LIMIT}`,
      scenario: { workers: PERMIT_WORKERS, store: false, acquireFor: () => ({ limit: LIMIT }) },
      expectBound: (o) => expect(o.permits.maxHolders).toBeLessThanOrEqual(LIMIT),
      expectLive: (o) => expect(o.permits.maxHolders).toBeGreaterThan(1),
      tolerates: 2,
      // Two other hung nodes leave exactly 3.
      hungInPhase2: [0, 1],
      // Every remaining node must then grant each permit, and the nodes' queues do not always
      // agree on who is next: permits were granted, but not to every worker (1/0/0/0/2/1 once).
      everyWorkerInPhase2: false,
      partition: FOUR_MAJORITIES,
    },
    RW: {
      label: 'RW. read-write',
      scenario: { workers: PERMIT_WORKERS, store: false, acquireFor: (id: number) => ({ mode: id < 2 ? 'write' : 'read' }) },
      expectBound: (o) => expect(o.permits.writerConflicts).toBe(0),
      expectLive: (o) => expect(o.sections.some((s) => s.mode === 'write')).toBe(true),
      tolerates: 2,
      hungInPhase2: [0, 1],
      everyWorkerInPhase2: true,
      partition: TWO_MAJORITIES, // workers 0 and 1 are the writers
    },
  };

  /** What every permit row must keep, besides its own bound; `busy`: the fault left the usual pace possible. */
  const expectPermitsSafe = (o: Outcome, busy: boolean) => {
    expect(o.exitCodes).toEqual(o.exitCodes.map(() => 0));
    expect(o.verdict.acquisitions).toBeGreaterThan(busy ? 20 : 0);
    // Fencing: a permit taken after another was acquired has a higher token.
    expect(o.verdict.tokenOrderViolations).toBe(0);
  };
  const heldNote = (o: Outcome) => {
    const held = o.sections.filter((s) => s.held);
    o.notes.unshift(`held inside ${held.length}x, still valid at wake ${held.filter((s) => s.held!.heldOnWake).length}x`);
  };

  interface PermitFault {
    readonly name: string;
    scenario(kind: Kind): Scenario | Promise<Scenario>;
    /** Beyond expectPermitsSafe and the kind's bound (both skipped where `bound` is false). */
    expect?(o: Outcome, kind: Kind, scenario: Scenario): void;
    /** false: the safety argument's assumptions are broken on purpose; the row reports only. */
    readonly bound?: false;
    /** Nodes down, hung or slow at once at worst: beyond a kind's tolerance, permits come slowly or not at all. */
    readonly down: number;
  }
  const restarted = new WeakMap<Scenario, number[]>();
  const phase2Of = new WeakMap<Scenario, { from: number; to: number }>();
  const faults: PermitFault[] = [
    {
      name: '0. none',
      down: 0,
      scenario: () => ({ durationMs: 2500 }),
      // Releases hand permits over, and the checker saw those sections too.
      expect: (o) => expect(o.sections.filter((s) => s.handedOver).length).toBeGreaterThan(0),
    },
    { name: '1. 2 of 5 kill -9, 600 ms, restart with data', down: 2, scenario: () => ({ durationMs: 4500, schedule: killMinority }) },
    { name: '2. 2 of 5 SIGSTOP 1 s', down: 2, scenario: () => ({ durationMs: 4500, schedule: pauseMinority }) },
    {
      name: '2b. 1 of 5 SIGSTOP 600 ms, kill -9, restart with data; then others SIGSTOP >= 1 s',
      down: 1, // the second phase hangs as many as the kind tolerates
      scenario: (kind) => {
        const fault = hungThenNeeded(kind.hungInPhase2, kind.everyWorkerInPhase2 ? everyWorker : anyWorker);
        const scenario = { durationMs: 4200, schedule: fault.schedule };
        phase2Of.set(scenario, fault.phase2);
        return scenario;
      },
      expect: (o, kind, scenario) => {
        const during = perWorkerIn(o, phase2Of.get(scenario)!);
        o.notes.unshift(`permits per worker while node(s) ${kind.hungInPhase2.join('+')} hung (needs node 4): ${during.join('/')}`);
        // Node 4 was counted again: without it no permit could be granted meanwhile.
        expect(during.reduce((a, b) => a + b)).toBeGreaterThan(0);
        if (kind.everyWorkerInPhase2) for (const k of during) expect(k).toBeGreaterThan(0);
      },
    },
    {
      name: '3a. 1 of 5 kill -9 + empty restart, no guard',
      down: 1,
      scenario: () => ({ durationMs: 4300, redlock: { restartGuard: 0 }, schedule: restartEmptyInTurn }),
    },
    {
      name: '3b. asymmetric partition, holders kept inside, node 0 restarted empty, no guard',
      down: 1,
      scenario: (kind) => asymmetric(kind.partition, 0),
      expect: (o) => heldNote(o),
      bound: false,
    },
    {
      name: "3d. 3b with the default restartGuard 'auto'",
      down: 1,
      scenario: (kind) => asymmetric(kind.partition, 'auto'),
      expect: (o, kind) => {
        heldNote(o);
        // Each round whose held workers all got in puts the guard to the test: at least two of the three must.
        // Not every one: a held worker reaches only its 3 nodes and needs a slot free on all of them, against
        // workers that reach every node; once in CI (Valkey, 2026-12-01) one was refused as busy for 2 s twice
        // and the round's 3 s wait ran out (8 held of 9). Getting in under a partition is not guaranteed.
        expect(o.sections.filter((s) => s.held).length).toBeGreaterThanOrEqual(2 * kind.partition.held.length);
      },
    },
    {
      name: '4. holder process SIGSTOP 2 x ttl',
      down: 0,
      scenario: () => ({ durationMs: 4500, schedule: pauseHolder }),
      expect: (o) => {
        const held = expectPausedHolderWarned(o);
        o.notes.unshift(`paused holder: signal fired ${held.filter((s) => s.held!.abortedAfterWrite).length}/${held.length}`);
      },
    },
    { name: '5. 2 of 5 behind a 30-80 ms/direction proxy (node timeout 200 ms)', down: 2, scenario: () => slowMinority() },
    {
      name: '6. 3 of 5 kill -9, 1.2 s then 0.8 s, restart with data',
      down: 3,
      scenario: () => {
        const at: number[] = [];
        const scenario = { durationMs: OUTAGE_MS, schedule: majorityOutage(at) };
        restarted.set(scenario, at);
        return scenario;
      },
      // Beyond every kind's tolerance: a permit needs quorum-many of the restarted nodes reconnected
      // (ioredis backs off up to 2 s), and 6 workers share 3 permits: that some got in is asserted.
      expect: (o, _kind, scenario) => expectOutageBounded(o, restarted.get(scenario)!, false),
    },
  ];

  for (const kind of Object.values(kinds)) {
    for (const fault of faults) {
      it(`${kind.label}, fault: ${fault.name}`, async () => {
        const scenario = await fault.scenario(kind);
        const o = await run(`${kind.label}: ${fault.name}`, { ...kind.scenario, ...scenario });
        expect(o.exitCodes).toEqual(o.exitCodes.map(() => 0));
        fault.expect?.(o, kind, scenario);
        if (fault.bound === false) return;
        const busy = fault.down <= kind.tolerates;
        expectPermitsSafe(o, busy);
        kind.expectBound(o);
        if (busy) kind.expectLive(o);
      });
    }
  }

  it('S7. the checker has teeth: a semaphore with each worker alone on one node admits more than the limit', async () => {
    const o = await run(`S7. BROKEN: semaphore limit ${LIMIT}, each worker a single node`, {
      ...kinds.S.scenario,
      durationMs: 2500,
      nodesFor: (id) => [fleet.urls[id % fleet.urls.length]!],
      schedule: async (ctx) => void ctx.begin(),
    });
    expect(o.permits.maxHolders).toBeGreaterThan(LIMIT);
  });

  it('RW7. the checker has teeth: a read-write lock with each worker alone on one node lets a writer in beside others', async () => {
    const o = await run('RW7. BROKEN: read-write, each worker a single node', {
      ...kinds.RW.scenario,
      durationMs: 2500,
      nodesFor: (id) => [fleet.urls[id % fleet.urls.length]!],
      schedule: async (ctx) => void ctx.begin(),
    });
    expect(o.permits.writerConflicts).toBeGreaterThan(0);
  });
});
