import { BadRequestException } from '@nestjs/common';
import { from, isObservable, Observable, of } from 'rxjs';
import { InvalidArgumentError, QuorumUnreachableError, ResourceBusyError, type Lock } from '../core/index.js';
import { validateResources } from '../core/layers.js';
import { heldInScope, heldLocks, requestFor, withLock, type RequestScope } from './lock-context.js';
import { afterPipes, resolveKey, type RouteArgs } from './lock-key.js';
import { LockBusyException } from './lock-busy.exception.js';
import { LockUnavailableException } from './lock-unavailable.exception.js';
import { resolveBusy, type ResolvedBusy } from './busy.js';
import type { LockedMetadata } from './locked.metadata.js';
import type { RedlockModuleOptions } from './redlock-module-options.interface.js';

/** Where Nest records a handler's parameter decorators (`ROUTE_ARGS_METADATA`, not exported by `@nestjs/common`'s index). */
const ROUTE_ARGS_METADATA = '__routeArguments__';

/** What the road needs from `LockService`. */
export interface LockTaker {
  take(resources: readonly string[], metadata: LockedMetadata, busy: ResolvedBusy): Promise<Lock | null>;
  settle(lock: Lock, metadata: LockedMetadata): void;
}

/**
 * One call of a `@Locked` method, whoever calls it. The key is built from the
 * arguments the method receives (after pipes, for a controller handler) and,
 * for a controller, the request the interceptor put in scope. Then:
 * - a controller handler, or a method declared to return an Observable, gets
 *   a cold Observable: the lock is taken on subscription and held until the
 *   result (value, promise or stream) completes, errors or is unsubscribed;
 * - any other method gets a Promise: the lock is held until its result settles.
 */
export function runLocked(
  taker: LockTaker,
  options: RedlockModuleOptions,
  metadata: LockedMetadata,
  self: object,
  args: unknown[],
  original: (...args: unknown[]) => unknown,
): unknown {
  const request = requestFor(metadata);
  const outer = heldLocks();
  const call = () => original.apply(self, args);
  if (request) {
    const busy = resolveBusy('controller', options.controllerBusy, metadata.options.busy);
    let resources: readonly string[];
    try {
      const routeArgs = Reflect.getMetadata(ROUTE_ARGS_METADATA, self.constructor, metadata.propertyKey) as RouteArgs | undefined;
      resources = validateResources(resolveKey(metadata.key, afterPipes(request.type, request.request, args, routeArgs)));
    } catch (error) {
      // A key the request cannot fill is the request's fault.
      if (error instanceof InvalidArgumentError && request.type === 'http') {
        throw new BadRequestException(error.message, { cause: error });
      }
      throw error;
    }
    if (heldInScope(resources, outer)) return call();
    return lockedStream({ taker, metadata, resources, busy, outer, call }, (error) => httpError(request, options, busy, error));
  }
  const resources = validateResources(resolveKey(metadata.key, { args }));
  if (heldInScope(resources, outer)) return call();
  const busy = resolveBusy('method', options.methodBusy, metadata.options.busy);
  const locked: LockedCall = { taker, metadata, resources, busy, outer, call };
  if (metadata.returnsObservable) return lockedStream(locked, (error) => error);
  return lockedPromise(locked);
}

/** One call to run under its lock: who takes it, on what, how busy is handled, the locks already held, and the method call. */
interface LockedCall {
  readonly taker: LockTaker;
  readonly metadata: LockedMetadata;
  readonly resources: readonly string[];
  readonly busy: ResolvedBusy;
  readonly outer: readonly Lock[];
  readonly call: () => unknown;
}

async function lockedPromise({ taker, metadata, resources, busy, outer, call }: LockedCall): Promise<unknown> {
  const lock = await taker.take(resources, metadata, busy);
  if (!lock) return undefined;
  try {
    const result = withLock(lock, call, outer);
    if (isObservable(result)) {
      // Awaiting it would release the lock before anyone subscribed.
      throw new TypeError(
        `@Locked ${metadata.method} returned an Observable but is not declared to: declare its return type ` +
          '(`: Observable<T>`) so that the lock is held from subscription to completion',
      );
    }
    return await result;
  } finally {
    taker.settle(lock, metadata);
  }
}

function lockedStream(
  { taker, metadata, resources, busy, outer, call }: LockedCall,
  mapError: (error: unknown) => unknown,
): Observable<unknown> {
  return new Observable<unknown>((subscriber) => {
    let lock: Lock | null = null;
    let settled = false;
    const settle = () => {
      if (settled || !lock) return;
      settled = true;
      taker.settle(lock, metadata);
    };
    let unsubscribeInner: (() => void) | undefined;
    taker.take(resources, metadata, busy).then(
      (taken) => {
        lock = taken;
        if (!taken) return subscriber.complete(); // busy and skipped
        if (subscriber.closed) return settle(); // the subscriber went away while we waited
        const inner = withLock(
          taken,
          () => {
            let result: unknown;
            try {
              result = call();
            } catch (error) {
              settle();
              subscriber.error(error);
              return undefined;
            }
            return (isObservable(result) ? result : result instanceof Promise ? from(result) : of(result)).subscribe({
              next: (value) => subscriber.next(value),
              error: (error: unknown) => {
                settle();
                subscriber.error(error);
              },
              complete: () => {
                settle();
                subscriber.complete();
              },
            });
          },
          outer,
        );
        unsubscribeInner = () => inner?.unsubscribe();
        if (subscriber.closed) inner?.unsubscribe();
      },
      (error: unknown) => subscriber.error(mapError(error)),
    );
    return () => {
      unsubscribeInner?.();
      settle();
    };
  });
}

/** A controller's lock that could not be taken, as the HTTP answer (other transports get the error itself). */
function httpError(request: RequestScope, options: RedlockModuleOptions, busy: ResolvedBusy, error: unknown): unknown {
  if (request.type !== 'http') return error;
  if (error instanceof ResourceBusyError) return new LockBusyException(busy.status, error);
  if (error instanceof QuorumUnreachableError) {
    return new LockUnavailableException(options.controllerUnavailable?.status ?? 503, error);
  }
  return error;
}
