/** Resources whose last released slot a client keeps at most (see SlotMemory). */
const REMEMBERED = 1024;

/**
 * Per resource, the slot of the last permit of a semaphore this client released: its
 * next permit of that resource tries that slot first, instead of one drawn at random
 * (see SlotChoice). Drawn at random, the slots' queues grow uneven, and a caller
 * refused at the back of a long one moves to a shorter one: an attempt more, and a
 * round to leave the queue it moved from (0.18 moves per permit in the semaphore
 * benchmark, where each process takes a permit again as soon as it released one).
 * Coming back to the slot it left, a caller keeps the queues as even as they were:
 * 0.002 moves per permit there (README, "Semaphore"). Only the next permit takes it (a
 * remembered slot is forgotten once taken), so callers of one client at the same moment
 * still draw theirs apart. At most REMEMBERED resources, the oldest forgotten first: an
 * application with a semaphore per tenant or per order keeps no entry per resource it
 * ever used.
 */
export class SlotMemory {
  private readonly slots = new Map<string, number>();

  /** A permit of `resource` held `slot` and was released. */
  released(resource: string, slot: number): void {
    // Deleted first, so that it is set again as the newest.
    this.slots.delete(resource);
    if (this.slots.size >= REMEMBERED) this.slots.delete(this.slots.keys().next().value!);
    this.slots.set(resource, slot);
  }

  /** The slot to try first for a permit of `resource` of `limit`, if one is remembered (then forgotten). */
  take(resource: string, limit: number): number | undefined {
    const slot = this.slots.get(resource);
    if (slot === undefined) return undefined;
    this.slots.delete(resource);
    // Of a semaphore of another limit (that call is refused as the mix it is, typed): any slot will do.
    return slot < limit ? slot : undefined;
  }

  /** How many resources are remembered. */
  get size(): number {
    return this.slots.size;
  }
}
