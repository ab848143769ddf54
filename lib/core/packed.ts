/**
 * Arrays the lock's hot path builds and hands on (per-node reports, votes,
 * flags; a call's keys), made in one elements kind whatever the tier of the
 * code that makes them.
 *
 * Why not `Array.prototype.map`: on Node 20's V8 it returns a packed array
 * while the calling function runs unoptimized, and a holey one once TurboFan
 * has inlined the call (`%HasHoleyElements`, `--allow-natives-syntax`). The
 * functions that read such an array (`[i]`, `for...of`, `includes`) and were
 * optimized for packed arrays are thrown away at the first holey one ("wrong
 * map" in `--trace-deopt`) and compiled again; in the contended semaphore's
 * processes that went on for tens of seconds, one producer optimized after
 * another. A loop that pushes makes a packed array in either tier (so do
 * `filter`, `slice`, spreads and `Array.from`; `new Array(n)` is always holey).
 * ESLint keeps `map` and `new Array` out of the files these arrays pass through.
 */
export function packedMap<T, R>(items: readonly T[], fn: (item: T, index: number) => R): R[] {
  const out: R[] = [];
  for (let i = 0; i < items.length; i++) out.push(fn(items[i]!, i));
  return out;
}

/** `n` copies of `value`, packed. */
export function packedFill<T>(n: number, value: T): T[] {
  const out: T[] = [];
  for (let i = 0; i < n; i++) out.push(value);
  return out;
}
