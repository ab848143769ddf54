import type { LockKey } from './lock-key.js';
import type { BusyOptions } from './redlock-module-options.interface.js';
import { LOCKED_METADATA } from './redlock.constants.js';

export interface LockedOptions {
  /** Busy behaviour for this method (overrides the module's default for its kind). */
  readonly busy?: BusyOptions;
  /**
   * Keep the lock at least this long (ms) after the method started, even if it
   * finished earlier: cron instances whose clocks differ a little then cannot
   * run the same tick twice.
   */
  readonly lockAtLeastFor?: number;
  /**
   * A semaphore instead of a mutex: at most `limit` calls run at once across
   * every instance (`@Locked('provider:stripe', 30_000, { limit: 5 })`). Every
   * user of the key must give the same limit.
   */
  readonly limit?: number;
  /** A read-write lock instead of a mutex: any number of `'read'` calls at once, or one `'write'` call. */
  readonly mode?: 'read' | 'write';
}

/** What `@Locked` records on the method. */
export interface LockedMetadata {
  readonly key: LockKey;
  readonly ttl: number | undefined;
  readonly options: LockedOptions;
  /** `ClassName.methodName`, for events and errors. */
  readonly method: string;
  /** The method's name on its class, where Nest records its parameter decorators. */
  readonly propertyKey: string | symbol;
  /** Declared to return an Observable (`design:returntype`): locked per subscription. */
  readonly returnsObservable: boolean;
}

/** The `@Locked` settings of a method (its wrapper), if it has any: the one place they are read. */
export function lockedMetadataOf(method: unknown): LockedMetadata | undefined {
  if (typeof method !== 'function') return undefined;
  return Reflect.getMetadata(LOCKED_METADATA, method) as LockedMetadata | undefined;
}

/** Records the `@Locked` settings on the method's wrapper. */
export function setLockedMetadata(method: (...args: never[]) => unknown, metadata: LockedMetadata): void {
  Reflect.defineMetadata(LOCKED_METADATA, metadata, method);
}
