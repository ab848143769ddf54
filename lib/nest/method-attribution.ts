import { AsyncLocalStorage } from 'node:async_hooks';
import type { LockEvent } from '../core/index.js';
import type { RedlockEvent } from './lock-events.js';

/** The `@Locked` method (`Class.method`) whose lock the current call chain is taking. */
export const takingFor = new AsyncLocalStorage<string>();

/**
 * Which `@Locked` method each event is about, for metric attributes: a set as
 * bounded as the application's decorated methods, where resource names are
 * not. A lock's events are known by its id from its `acquired` event on (which
 * the core emits in the call chain that takes it); `busy` and `acquire-failed`
 * are emitted in that chain too. Events of locks taken outside `@Locked` have none.
 */
export class MethodAttribution {
  private readonly byLock = new Map<string, string>();
  /** Every method seen holding a lock: its gauge reads 0 once it holds none, instead of keeping its last value. */
  private readonly known = new Set<string>();

  /** Called with every core event before it is passed on. */
  before(event: LockEvent): void {
    if (event.type !== 'acquired') return;
    const method = takingFor.getStore();
    if (method === undefined) return;
    this.byLock.set(event.lockId, method);
    this.known.add(method);
  }

  /** Called with every core event after it was passed on: a lock's last event ends its entry. */
  after(event: LockEvent): void {
    if (event.type === 'released' || event.type === 'lost') this.byLock.delete(event.lockId);
  }

  methodOf(event: RedlockEvent): string | undefined {
    if (event.type === 'skipped') return event.method;
    if ('lockId' in event) return this.byLock.get(event.lockId);
    if (event.type === 'busy' || event.type === 'acquire-failed') return takingFor.getStore();
    return undefined;
  }

  /** Locks held now per method; `undefined` counts those taken outside `@Locked`, out of `total`. */
  heldByMethod(total: number): Map<string | undefined, number> {
    const counts = new Map<string | undefined, number>([...this.known].map((method) => [method, 0]));
    for (const method of this.byLock.values()) counts.set(method, (counts.get(method) ?? 0) + 1);
    counts.set(undefined, Math.max(0, total - this.byLock.size));
    return counts;
  }
}
