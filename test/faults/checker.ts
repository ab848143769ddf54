/**
 * Checks one scenario's merged history. Inputs: the critical sections every
 * worker recorded (times are the host's monotonic clock, `process.hrtime`, in ms,
 * one clock for every process on the host), the failed acquisitions, and the
 * fenced store's audit log in the store's own order.
 */

/** One critical section, as a worker recorded it. */
export interface Section {
  readonly w: number;
  /** `<worker>.<n>`: one acquisition. */
  readonly who: string;
  readonly token: number;
  /** When the acquire call began, and when it returned the lock. */
  readonly asked: number;
  readonly start: number;
  readonly end: number;
  /** When the lock stops being exclusive: start + its validity, moved by each extension. */
  readonly validUntil: number;
  /** Whether the lock was still valid (isHeld) when the section ended, and how often it was extended. */
  readonly heldAtEnd: boolean;
  readonly extensions: number;
  /** A release handed the lock over to this waiter (its 'acquired' event said so). */
  readonly handedOver?: boolean;
  /** A read-write lock's section: 'read' or 'write'; absent for a mutex or a semaphore. */
  readonly mode?: 'read' | 'write';
  /** What the fenced store said to this section's accesses: 'ok', 'stale', 'none' (not used) or 'error:...'. */
  readonly store: string;
  /** Set when the runner held this section (to pause the worker, or to restart a node meanwhile). */
  readonly held?: {
    readonly wokeAt: number;
    readonly heldOnWake: boolean;
    readonly validityOnWake: number;
    readonly abortedOnWake: boolean;
    readonly abortedAfterWrite: boolean;
    readonly reason?: string;
  };
}

/** An acquisition that failed. */
export interface Failure {
  readonly w: number;
  readonly fail: string;
  readonly asked: number;
  readonly at: number;
  /** Each node's outcome in the last attempt, e.g. 'ok', 'busy', 'error:Connection is closed.'. */
  readonly nodes?: readonly string[];
}

/** One decision of the fenced store, in the store's order. */
export interface StoreEntry {
  readonly seq: number;
  readonly token: number;
  readonly who: string;
  readonly op: string;
  readonly ok: boolean;
}

/** When a fault was active, ms (same clock as the sections). */
export interface Window {
  readonly from: number;
  readonly to: number;
}

export interface History {
  readonly sections: readonly Section[];
  readonly failures: readonly Failure[];
  readonly store: readonly StoreEntry[];
  /** The counter's final value in the store (each accepted write added 1 to what its read saw). */
  readonly counter: number;
  /** Fault windows; none: the fault was active for the whole run. */
  readonly windows: readonly Window[];
  readonly runFrom: number;
  readonly runTo: number;
}

export interface Verdict {
  readonly acquisitions: number;
  /** Pairs of critical sections of different acquisitions that overlap in real time. */
  readonly overlaps: number;
  /**
   * Of those, the pairs where the earlier holder had overrun its lock: its
   * validity (extensions included) had ended, not held at its end, before the later
   * section began. A stalled or starved holder, not a second grant of a valid lock.
   */
  readonly overrunOverlaps: number;
  /** The longest such overrun: how long after its validity ended an overrunning section went on, ms. */
  readonly longestOverrun: number;
  /** Sections involved in at least one overlap. */
  readonly overlapping: number;
  /** Store accesses refused because a higher token had been seen. */
  readonly staleRejected: number;
  /** Accepted store accesses whose token was below one accepted earlier (the store's contract: must be 0). */
  readonly storeRegressions: number;
  /** Accepted accesses by two different acquisitions with the same token (the store cannot tell them apart). */
  readonly tokenCollisions: number;
  /** Pairs where A was acquired before B's acquire began, yet token(B) <= token(A) (the library's documented guarantee). */
  readonly tokenOrderViolations: number;
  /** Accepted writes minus the final counter: increments lost to an interleaving the store did not refuse. */
  readonly lostUpdates: number;
  /** Longest gap, ms, between consecutive critical sections (of anyone) that overlaps a fault window. */
  readonly longestUnavailability: number;
  /** Failed acquisitions by error code. */
  readonly failures: Readonly<Record<string, number>>;
  /** Longest failed acquire call, ms (from the call to its rejection). */
  readonly longestFailure: number;
}

export function check(h: History): Verdict {
  const sections = [...h.sections].sort((a, b) => a.start - b.start);

  // Real-time overlaps: sorted by start, each section against the later-starting
  // ones that start before it ends.
  let overlaps = 0;
  let overrunOverlaps = 0;
  let longestOverrun = 0;
  const overlapping = new Set<string>();
  for (let i = 0; i < sections.length; i++) {
    const a = sections[i]!;
    // Not valid at its end: it overran its lock (validUntil counts its extensions), and a
    // later holder may legitimately start after validUntil.
    const overran = !a.heldAtEnd;
    if (overran) longestOverrun = Math.max(longestOverrun, a.end - a.validUntil);
    for (let j = i + 1; j < sections.length && sections[j]!.start < a.end; j++) {
      const b = sections[j]!;
      if (b.who === a.who) continue;
      overlaps++;
      if (overran && b.start >= a.validUntil) overrunOverlaps++;
      overlapping.add(a.who).add(b.who);
    }
  }

  // The store's own history, in its order.
  const store = [...h.store].sort((a, b) => a.seq - b.seq);
  let highest = -Infinity;
  let storeRegressions = 0;
  let tokenCollisions = 0;
  const ownerOf = new Map<number, string>();
  for (const e of store) {
    if (!e.ok) continue;
    if (e.token < highest) storeRegressions++;
    highest = Math.max(highest, e.token);
    const owner = ownerOf.get(e.token);
    if (owner === undefined) ownerOf.set(e.token, e.who);
    else if (owner !== e.who) tokenCollisions++;
  }
  const staleRejected = store.filter((e) => !e.ok).length;
  const acceptedWrites = store.filter((e) => e.ok && e.op === 'set').length;

  // Token order: acquired (A.start) before B's acquire began (B.asked) => token(B) > token(A).
  // Sorted by asked, with a running maximum of the tokens of sections acquired before.
  let tokenOrderViolations = 0;
  const byAsked = [...sections].sort((a, b) => a.asked - b.asked);
  const byStart = sections; // sorted by start
  let k = 0;
  let maxBefore = -Infinity;
  for (const b of byAsked) {
    while (k < byStart.length && byStart[k]!.start < b.asked) maxBefore = Math.max(maxBefore, byStart[k++]!.token);
    if (b.token <= maxBefore) tokenOrderViolations++;
  }

  // Unavailability: gaps between the union of critical sections, where the gap overlaps a fault window.
  const windows = h.windows.length > 0 ? h.windows : [{ from: h.runFrom, to: h.runTo }];
  let longest = 0;
  // From the first critical section on: the workers' start-up is not a fault.
  let lastEnd = sections[0]?.start ?? h.runFrom;
  const consider = (from: number, to: number) => {
    if (to <= from) return;
    if (windows.some((w) => from < w.to && to > w.from)) longest = Math.max(longest, to - from);
  };
  for (const s of sections) {
    consider(lastEnd, s.start);
    lastEnd = Math.max(lastEnd, s.end);
  }
  consider(lastEnd, h.runTo);

  const failures: Record<string, number> = {};
  let longestFailure = 0;
  for (const f of h.failures) {
    failures[f.fail] = (failures[f.fail] ?? 0) + 1;
    longestFailure = Math.max(longestFailure, f.at - f.asked);
  }

  return {
    acquisitions: sections.length,
    overlaps,
    overrunOverlaps,
    longestOverrun: Math.round(longestOverrun),
    overlapping: overlapping.size,
    staleRejected,
    storeRegressions,
    tokenCollisions,
    tokenOrderViolations,
    lostUpdates: acceptedWrites - h.counter,
    longestUnavailability: Math.round(longest),
    failures,
    longestFailure: Math.round(longestFailure),
  };
}

/** At most how many permits were held at once, and whether a writer ever held beside anyone. */
export interface PermitVerdict {
  /** Most sections inside at once, each counted only while its permit was valid (an overrun past its validity is not). */
  readonly maxHolders: number;
  /** The same, counting every section to its end (overruns included). */
  readonly maxHoldersRaw: number;
  /** Instants where a writer was inside beside another writer or a reader, within validity. */
  readonly writerConflicts: number;
}

/**
 * A sweep over the sections' intervals: [start, end], cut at validUntil where
 * the section overran its permit (what the library promises only lasts as
 * long as the validity it gave).
 */
export function checkPermits(sections: readonly Section[]): PermitVerdict {
  const sweep = (valid: boolean) => {
    const points: { t: number; d: number; mode?: string }[] = [];
    for (const s of sections) {
      const end = valid && !s.heldAtEnd ? Math.min(s.end, s.validUntil) : s.end;
      if (end <= s.start) continue;
      points.push({ t: s.start, d: 1, mode: s.mode }, { t: end, d: -1, mode: s.mode });
    }
    // Ends before starts at one instant: a hand-over is not an overlap.
    points.sort((a, b) => a.t - b.t || a.d - b.d);
    let inside = 0;
    let most = 0;
    let writers = 0;
    let conflicts = 0;
    for (const p of points) {
      inside += p.d;
      if (p.mode === 'write') writers += p.d;
      most = Math.max(most, inside);
      if (p.d > 0 && writers > 0 && inside > 1) conflicts++;
    }
    return { most, conflicts };
  };
  const valid = sweep(true);
  return { maxHolders: valid.most, maxHoldersRaw: sweep(false).most, writerConflicts: valid.conflicts };
}
