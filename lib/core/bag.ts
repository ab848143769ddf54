/**
 * An unordered collection for what a client keeps across calls and changes in
 * every call (the calls and waits under way, the held locks): add and remove in
 * constant time, over one array.
 *
 * Why not a `Set` (or a `Map`): V8 rebuilds a Set's table when it grows or
 * shrinks (emptied, it shrinks), and the old table keeps a link to the new
 * one, for iterators. Once a table of a long-lived Set has been moved to the
 * old generation, every later table, and the entries each one held, is kept
 * alive by that link through every minor GC until the next full one: the
 * minor GCs promote them all, and the old generation fills with garbage that
 * only a full (mark-compact) GC of the application's whole heap frees.
 * Promoted per lock (`node bench/heap-promotion.mjs`): one caller locking in a
 * loop 600-1070 bytes (now 4-6), 8 callers 7.2 KB (now 2 bytes).
 * An array's element store is trimmed in place when it shrinks, and copied
 * without a link when it grows.
 */
export class Bag<T> {
  private readonly entries: { readonly item: T; index: number }[] = [];

  get size(): number {
    return this.entries.length;
  }

  /** Adds `item`; returns what removes it (again: nothing). */
  add(item: T): () => void {
    const entry = { item, index: this.entries.length };
    this.entries.push(entry);
    return () => this.remove(entry);
  }

  /** The items, as a copy. */
  items(): T[] {
    const out: T[] = [];
    for (const entry of this.entries) out.push(entry.item);
    return out;
  }

  private remove(entry: { readonly item: T; index: number }): void {
    if (entry.index < 0) return;
    // The last entry takes the removed one's place: the array only ever shrinks at its end.
    const last = this.entries.pop()!;
    if (last !== entry) {
      this.entries[entry.index] = last;
      last.index = entry.index;
    }
    entry.index = -1;
  }
}
