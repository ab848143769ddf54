/** One line of a worker's history. */
export interface HistoryEntry {
  readonly w: number;
  readonly token?: number;
  readonly asked?: number;
  readonly start?: number;
  readonly end?: number;
  /** When its store write was accepted. */
  readonly wrote?: number;
  readonly store?: string;
  readonly signalled?: boolean;
  readonly fail?: string;
  readonly at?: number;
}

export interface Verdict {
  readonly acquisitions: number;
  /** Pairs of critical sections of different workers that overlap in real time. */
  readonly overlaps: number;
  /** Store accesses refused because a newer token had been seen. */
  readonly staleRejected: number;
  /** Accepted store accesses whose token was lower than one accepted before (must be 0). */
  readonly storeRegressions: number;
  /** Longest time, ms, from the end of one critical section to the start of the next. */
  readonly longestGap: number;
  readonly failures: Record<string, number>;
}

/**
 * Checks a merged history: no two critical sections overlap in real time, and
 * the fenced store's accepted writes, in the order they were accepted, never
 * carried a token lower than an earlier one.
 */
export function check(entries: readonly HistoryEntry[]): Verdict {
  const sections = entries.filter((e) => e.start !== undefined).sort((a, b) => a.start! - b.start!);
  let overlaps = 0;
  for (let i = 0; i < sections.length; i++) {
    for (let j = i + 1; j < sections.length && sections[j]!.start! < sections[i]!.end!; j++) {
      if (sections[j]!.w !== sections[i]!.w) overlaps++;
    }
  }
  let highest = -Infinity;
  let storeRegressions = 0;
  const accepted = sections.filter((s) => s.store === 'ok').sort((a, b) => a.wrote! - b.wrote!);
  for (const s of accepted) {
    if (s.token! < highest) storeRegressions++;
    highest = Math.max(highest, s.token!);
  }
  let longestGap = 0;
  let lastEnd = sections[0]?.start ?? 0;
  for (const s of sections) {
    longestGap = Math.max(longestGap, s.start! - lastEnd);
    lastEnd = Math.max(lastEnd, s.end!);
  }
  const failures: Record<string, number> = {};
  for (const e of entries) if (e.fail) failures[e.fail] = (failures[e.fail] ?? 0) + 1;
  return {
    acquisitions: sections.length,
    overlaps,
    staleRejected: sections.filter((s) => s.store === 'stale').length,
    storeRegressions,
    longestGap: Math.round(longestGap),
    failures,
  };
}
