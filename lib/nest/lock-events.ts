import { filter, type OperatorFunction } from 'rxjs';
import type { LockEvent } from '../core/index.js';

/** A `@Locked` method did not run: its resource was busy, too few nodes answered to lock it, or the module was shutting down (`closed`). */
export interface LockSkippedEvent {
  readonly type: 'skipped';
  readonly at: number;
  readonly resources: readonly string[];
  readonly reason: 'busy' | 'unreachable' | 'closed';
  /** `ClassName.methodName` of the skipped method. */
  readonly method: string;
}

/** Every event `LockService.events$` carries. */
export type RedlockEvent = LockEvent | LockSkippedEvent;

export type RedlockEventOf<T extends RedlockEvent['type']> = Extract<RedlockEvent, { type: T }>;

/**
 * Typed filter for `events$`.
 *
 * @example
 * locks.events$.pipe(ofLockEvent('lost', 'extend-failed')).subscribe((e) => log.error(e));
 */
export function ofLockEvent<T extends RedlockEvent['type']>(...types: T[]): OperatorFunction<RedlockEvent, RedlockEventOf<T>> {
  const wanted = new Set<string>(types);
  return filter((event): event is RedlockEventOf<T> => wanted.has(event.type));
}
