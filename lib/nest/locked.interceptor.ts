import { Injectable, type CallHandler, type ExecutionContext, type NestInterceptor } from '@nestjs/common';
import type { Observable } from 'rxjs';
import { withRequest } from './lock-context.js';
import type { LockKeyContext } from './lock-key.js';
import { lockedMetadataOf } from './locked.metadata.js';

/**
 * Puts the request of a `@Locked` controller handler in scope for the
 * handler's method wrapper, which takes the lock after pipes ran (keys from
 * the arguments the handler receives) and holds it until the handler's
 * result settles, or its stream completes, errors or is unsubscribed.
 * `RedlockModule` registers it globally (APP_INTERCEPTOR); it is not meant to
 * be subclassed or bound again.
 */
@Injectable()
export class LockedInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const metadata = lockedMetadataOf(context.getHandler());
    if (!metadata) return next.handle();
    // Nest binds the rest of the call (pipes, handler) to the async context of handle().
    return withRequest({ metadata, type: context.getType<string>(), request: this.keyContext(context) }, () => next.handle());
  }

  /** What `@Locked` templates and key functions see of the request, before pipes. */
  private keyContext(context: ExecutionContext): Omit<LockKeyContext, 'args' | 'self'> {
    switch (context.getType<string>()) {
      case 'http': {
        const request = context.switchToHttp().getRequest();
        const { params, query, body, user, headers } = request ?? {};
        return { params, query, body, user, headers };
      }
      case 'rpc':
        return { data: context.switchToRpc().getData() };
      case 'ws':
        return { data: context.switchToWs().getData() };
      case 'graphql': {
        // A resolver's arguments are (root, args, context, info).
        const [, data, gqlContext] = context.getArgs<[unknown, unknown, { req?: { user?: unknown }; user?: unknown } | undefined]>();
        return { data, context: gqlContext, user: gqlContext?.req?.user ?? gqlContext?.user };
      }
      default:
        return {};
    }
  }
}
