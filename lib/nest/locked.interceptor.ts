import { BadRequestException, Inject, Injectable, type CallHandler, type ExecutionContext, type NestInterceptor } from '@nestjs/common';
import { Observable, throwError } from 'rxjs';
import { InvalidArgumentError } from '../core/errors/invalid-argument.error.js';
import { ResourceBusyError } from '../core/errors/resource-busy.error.js';
import { validateResources } from '../core/keys.js';
import type { Lock } from '../core/lock.js';
import { heldInScope, withLock } from './lock-context.js';
import { resolveKey, type LockKeyContext } from './lock-key.js';
import { LockBusyException } from './lock-busy.exception.js';
import { LockService } from './lock.service.js';
import type { LockedMetadata } from './locked.decorator.js';
import type { BusyOptions, RedlockModuleOptions } from './redlock-module-options.interface.js';
import { LOCKED_METADATA } from './redlock.constants.js';
import { REDLOCK_MODULE_OPTIONS } from './redlock.module-definition.js';

/**
 * Takes the lock of a `@Locked` controller handler, with keys built from the
 * request, and holds it until the handler's result settles (a promise) or its
 * stream completes, errors or is unsubscribed. Busy HTTP handlers answer 409
 * by default. Members are protected so that it can be subclassed.
 */
@Injectable()
export class LockedInterceptor implements NestInterceptor {
  constructor(
    protected readonly locks: LockService,
    @Inject(REDLOCK_MODULE_OPTIONS) protected readonly options: RedlockModuleOptions,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const handler = context.getHandler();
    const metadata = Reflect.getMetadata(LOCKED_METADATA, handler) as LockedMetadata | undefined;
    if (!metadata) return next.handle();
    let resources: readonly string[];
    try {
      resources = validateResources(resolveKey(metadata.key, this.keyContext(context)));
    } catch (error) {
      // A key built from the request that cannot be built is the request's fault.
      if (error instanceof InvalidArgumentError && context.getType() === 'http') {
        return throwError(() => new BadRequestException(error.message, { cause: error }));
      }
      throw error;
    }
    if (heldInScope(resources)) return next.handle();
    const busy: BusyOptions = { mode: 'throw', status: 409, ...this.options.controllerBusy, ...metadata.options.busy };

    return new Observable<unknown>((subscriber) => {
      let lock: Lock | null | undefined;
      let settled = false;
      const settle = () => {
        if (settled || !lock) return;
        settled = true;
        this.locks.settle(lock, metadata);
      };
      let unsubscribeInner: (() => void) | undefined;
      this.locks.take(resources, metadata, busy).then(
        (taken) => {
          lock = taken;
          if (!taken) return subscriber.complete(); // busy and skipped
          if (subscriber.closed) return settle(); // the client went away while we waited
          const inner = withLock(
            taken,
            () =>
              next.handle().subscribe({
                next: (value) => subscriber.next(value),
                error: (error: unknown) => {
                  settle();
                  subscriber.error(error);
                },
                complete: () => {
                  settle();
                  subscriber.complete();
                },
              }),
            handler,
          );
          unsubscribeInner = () => inner.unsubscribe();
        },
        (error: unknown) => subscriber.error(this.mapError(context, error, busy)),
      );
      return () => {
        unsubscribeInner?.();
        settle();
      };
    });
  }

  /** What `@Locked` templates and key functions see for this kind of handler. */
  protected keyContext(context: ExecutionContext): LockKeyContext {
    const args = context.getArgs();
    switch (context.getType<string>()) {
      case 'http': {
        const request = context.switchToHttp().getRequest();
        const { params, query, body, user, headers } = request ?? {};
        return { args, params, query, body, user, headers };
      }
      case 'rpc':
        return { args, data: context.switchToRpc().getData() };
      case 'ws':
        return { args, data: context.switchToWs().getData() };
      default:
        return { args };
    }
  }

  protected mapError(context: ExecutionContext, error: unknown, busy: BusyOptions): unknown {
    if (error instanceof ResourceBusyError && context.getType() === 'http') {
      return new LockBusyException(busy.status ?? 409, error);
    }
    return error;
  }
}
