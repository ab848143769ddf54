import { InvalidArgumentError } from '../core/index.js';
import { checkAcquireOptions, checkKnown, checkTtl } from '../core/layers.js';
import { isObservable, type Observable } from 'rxjs';
import { checkBusy } from './busy.js';
import { checkKey, type LockKey } from './lock-key.js';
import { setLockedMetadata, type LockedMetadata, type LockedOptions } from './locked.metadata.js';
import { runnerOf, type LockedRunner } from './locked.registry.js';
import { failedCall } from './locked.runner.js';

export type { LockedMetadata, LockedOptions } from './locked.metadata.js';

const LOCKED_KEYS: ReadonlySet<string> = new Set<keyof LockedOptions>(['busy', 'lockAtLeastFor', 'limit', 'mode']);

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
export function Locked<TArgs extends unknown[] = any[], TSelf = any>(
  key: LockKey<TArgs, TSelf>,
  ttl?: number,
  options: LockedOptions = {},
): LockedDecorator {
  checkKey(key);
  if (typeof options !== 'object' || options === null) throw new InvalidArgumentError('@Locked options', 'an object', options);
  checkKnown('@Locked options', options, LOCKED_KEYS);
  if (ttl !== undefined) checkTtl(ttl, '@Locked ttl');
  if (options.lockAtLeastFor !== undefined) checkTtl(options.lockAtLeastFor, '@Locked lockAtLeastFor');
  checkBusy('@Locked busy', options.busy);
  if (options.limit !== undefined || options.mode !== undefined) {
    checkAcquireOptions({ limit: options.limit, mode: options.mode });
    // A key function may name one resource per call: only a list is known now.
    if (Array.isArray(key) && key.length > 1) {
      throw new InvalidArgumentError('@Locked key', 'a single resource with `limit` or `mode` (a permit is of one resource)', key);
    }
  }
  return (target, propertyKey, descriptor) => {
    if (typeof target === 'function') {
      throw new TypeError(`@Locked applies to instance methods, not to the static ${target.name}.${String(propertyKey)}`);
    }
    // No descriptor: a class field (compilers that do not type-check let it through).
    const original = descriptor?.value as ((...args: unknown[]) => unknown) | undefined;
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
      let runner: LockedRunner;
      try {
        runner = runnerOf(this, metadata);
      } catch (error) {
        return failedCall(metadata, error);
      }
      return runner.run(metadata, this, args, original);
    };
    // Metadata set by decorators applied before this one (@Cron below @Locked)
    // lives on the original function: carry it over, or the scheduler loses it.
    for (const metaKey of Reflect.getMetadataKeys(original)) {
      Reflect.defineMetadata(metaKey, Reflect.getMetadata(metaKey, original), locked);
    }
    Object.defineProperty(locked, 'name', { value: original.name });
    setLockedMetadata(locked, metadata);
    descriptor.value = locked as unknown as typeof descriptor.value;
  };
}

/** Whether a `design:returntype` is rxjs's `Observable` (any copy of rxjs) or a subclass of it. */
function declaresObservable(type: unknown): boolean {
  return typeof type === 'function' && isObservable((type as { prototype?: unknown }).prototype);
}
