import { checkTtl } from '../core/options.js';
import { isObservable, type Observable } from 'rxjs';
import { checkKey, type LockKey } from './lock-key.js';
import type { BusyOptions } from './redlock-module-options.interface.js';
import { LOCKED_METADATA } from './redlock.constants.js';
import { runnerOf } from './locked.registry.js';

export interface LockedOptions {
  /** Busy behaviour for this method (overrides the module's default for its kind). */
  readonly busy?: BusyOptions;
  /**
   * Keep the lock at least this long (ms) after the method started, even if it
   * finished earlier: cron instances whose clocks differ a little then cannot
   * run the same tick twice.
   */
  readonly lockAtLeastFor?: number;
}

/**
 * The methods `@Locked` applies to. Taking a lock waits for the nodes, so a
 * locked method cannot return its value synchronously: it returns a Promise, an
 * Observable (locked per subscription), or nothing (`void`: the body then runs
 * once the lock is taken, after the call returned). A method declared to return
 * a plain value does not compile under `@Locked`: declare it `async`.
 */
export type LockableMethod = (...args: any[]) => PromiseLike<unknown> | Observable<unknown> | void;

/** `@Locked(...)`: a method decorator for {@link LockableMethod}s. */
export type LockedDecorator = <M extends LockableMethod>(
  target: object,
  propertyKey: string | symbol,
  descriptor: TypedPropertyDescriptor<M>,
) => void;

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

/**
 * Runs the method under a distributed lock, extended while it runs and
 * released when it settles (or, for an Observable, when it completes, errors
 * or is unsubscribed).
 *
 * - On controllers (HTTP, RPC, WS), the module's interceptor takes the lock;
 *   keys may use the request: `'order:{params.id}'`, `'{user.id}'`, `'{body.sku}'`.
 * - On cron, interval, timeout and other provider methods, keys may use the
 *   arguments: `'import:{args.0}'`, or a function `({ args }) => ...`.
 *
 * Decorator order with `@Cron` does not matter.
 *
 * @example
 * @Cron('0 * * * * *') @Locked('report:minutely', 30_000) async report() {}
 * @Post(':id/pay') @Locked('order:{params.id}') pay(@Param('id') id: string) {}
 */
export function Locked<TArgs extends unknown[] = any[]>(
  key: LockKey<TArgs>,
  ttl?: number,
  options: LockedOptions = {},
): LockedDecorator {
  checkKey(key);
  if (ttl !== undefined) checkTtl(ttl, '@Locked ttl');
  if (options.lockAtLeastFor !== undefined) checkTtl(options.lockAtLeastFor, '@Locked lockAtLeastFor');
  return (target, propertyKey, descriptor) => {
    const original = descriptor.value as ((...args: unknown[]) => unknown) | undefined;
    if (typeof original !== 'function') throw new TypeError('@Locked applies to methods only');
    const metadata: LockedMetadata = {
      key: key as LockKey,
      ttl,
      options,
      method: `${(target as object).constructor.name}.${String(propertyKey)}`,
      propertyKey,
      returnsObservable: declaresObservable(Reflect.getMetadata('design:returntype', target, propertyKey)),
    };
    // Every call, from a router, a scheduler or your code, takes this one road.
    const locked = function (this: object, ...args: unknown[]): unknown {
      return runnerOf(this, metadata).run(metadata, this, args, original);
    };
    // Metadata set by decorators applied before this one (@Cron below @Locked)
    // lives on the original function: carry it over, or the scheduler loses it.
    for (const metaKey of Reflect.getMetadataKeys(original)) {
      Reflect.defineMetadata(metaKey, Reflect.getMetadata(metaKey, original), locked);
    }
    Object.defineProperty(locked, 'name', { value: original.name });
    Reflect.defineMetadata(LOCKED_METADATA, metadata, locked);
    descriptor.value = locked as unknown as typeof descriptor.value;
  };
}

/** Whether a `design:returntype` is rxjs's `Observable` (any copy of rxjs) or a subclass of it. */
function declaresObservable(type: unknown): boolean {
  return typeof type === 'function' && isObservable((type as { prototype?: unknown }).prototype);
}
