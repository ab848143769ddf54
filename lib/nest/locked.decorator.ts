import { checkTtl } from '../core/options.js';
import { lockScope } from './lock-context.js';
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

/** What `@Locked` records on the method. */
export interface LockedMetadata {
  readonly key: LockKey;
  readonly ttl: number | undefined;
  readonly options: LockedOptions;
  /** `ClassName.methodName`, for events and errors. */
  readonly method: string;
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
): MethodDecorator {
  checkKey(key);
  if (ttl !== undefined) checkTtl(ttl, '@Locked ttl');
  if (options.lockAtLeastFor !== undefined) checkTtl(options.lockAtLeastFor, '@Locked lockAtLeastFor');
  return (target, propertyKey, descriptor: PropertyDescriptor) => {
    const original = descriptor.value as (...args: unknown[]) => unknown;
    if (typeof original !== 'function') throw new TypeError('@Locked applies to methods only');
    const metadata: LockedMetadata = {
      key: key as LockKey,
      ttl,
      options,
      method: `${(target as object).constructor.name}.${String(propertyKey)}`,
    };
    const locked = function (this: object, ...args: unknown[]): unknown {
      const scope = lockScope.getStore();
      if (scope?.intercepted === locked) {
        scope.intercepted = undefined; // the interceptor holds the lock for this call
        return original.apply(this, args);
      }
      return runnerOf(this, metadata).run(metadata, this, args, original);
    };
    // Metadata set by decorators applied before this one (@Cron below @Locked)
    // lives on the original function: carry it over, or the scheduler loses it.
    for (const metaKey of Reflect.getMetadataKeys(original)) {
      Reflect.defineMetadata(metaKey, Reflect.getMetadata(metaKey, original), locked);
    }
    Object.defineProperty(locked, 'name', { value: original.name });
    Reflect.defineMetadata(LOCKED_METADATA, metadata, locked);
    descriptor.value = locked;
  };
}
