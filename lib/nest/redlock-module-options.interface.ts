import type { LoggerService } from '@nestjs/common';
import type { RedlockOptions, ResourceBusyError } from '../core/index.js';
import type { ScheduleLockOptions } from './schedule-lock.options.js';

/** What a busy handler hook (`busy.exception`) is told of the call it answers. */
export interface BusyContext {
  /** `ClassName.methodName`. */
  readonly method: string;
  readonly resources: readonly string[];
  /** How the method was called: `http`, `rpc`, `ws`, `graphql` (controller handlers and resolvers), `job` or `method`. */
  readonly type: string;
  /** The method's arguments (after pipes on handlers). */
  readonly args: readonly unknown[];
  /** What the nodes answered. */
  readonly error: ResourceBusyError;
}

/** What a locked method does when its resource is held by someone else. */
export interface BusyOptions {
  /**
   * `skip` returns `undefined` without running (and emits `skipped`); `throw`
   * rejects (HTTP: an exception with `status`); `wait` retries for up to `wait`
   * ms, then behaves as `throw` on controllers, `delay` on queue jobs and
   * `skip` elsewhere; `delay` (queue jobs only, their default) moves the job
   * back to BullMQ's delayed set so that it runs again later.
   */
  readonly mode?: 'skip' | 'throw' | 'wait' | 'delay';
  /** Milliseconds to wait for the resource when `mode` is `wait`. Default 5000. */
  readonly wait?: number;
  /** HTTP status answered on a busy controller resource. Default 409. */
  readonly status?: number;
  /**
   * Queue jobs in `delay` mode: ms the job is delayed by the first time it is
   * busy; each later busy run doubles the job's last delay, up to `maxDelay`.
   * Defaults 1000 and 30000.
   */
  readonly delay?: number;
  readonly maxDelay?: number;
  /**
   * Your own busy error: what a busy call throws (in `throw` mode, and after a
   * `wait` on controllers) instead of the transport's default (HTTP 409,
   * GraphQL `RESOURCE_BUSY`, `ResourceBusyError`). Nest's exception filters
   * see it as if the handler threw it.
   */
  readonly exception?: (context: BusyContext) => unknown;
}

/** Options of `RedlockModule.forRoot` / `forRootAsync`. */
export interface RedlockModuleOptions extends RedlockOptions {
  /** Busy behaviour of `@Locked` on HTTP/RPC/WS handlers. Default `{ mode: 'throw', status: 409 }`. */
  readonly controllerBusy?: BusyOptions;
  /** Busy behaviour of `@Locked` on cron, interval, timeout and provider methods. Default `{ mode: 'skip' }`. */
  readonly methodBusy?: BusyOptions;
  /**
   * Busy behaviour of `@Locked` on a `@nestjs/bullmq` processor's
   * `process(job)`. Default `{ mode: 'delay', delay: 1000, maxDelay: 30000 }`:
   * the job goes back to the delayed set (no attempt counted) instead of
   * completing without running.
   */
  readonly jobBusy?: BusyOptions;
  /**
   * Lock every `@Cron`, `@Interval` and `@Timeout` method of the application
   * without a decorator on each (`true`, or settings); `@Unlocked()` opts a
   * method out, and a method's own `@Locked` wins.
   */
  readonly schedule?: boolean | ScheduleLockOptions;
  /**
   * HTTP status answered by a `@Locked` HTTP handler whose lock could not be
   * taken because too few nodes answered (`QuorumUnreachableError`). Default
   * `{ status: 503 }`.
   */
  readonly controllerUnavailable?: { readonly status?: number };
  /**
   * Where lock events and release failures are logged: Nest's `Logger` with the
   * `Redlock` context by default; your own `LoggerService` (messages are passed
   * without a context); `false` for none. Routine events (acquired, extended,
   * released) are `verbose`.
   */
  readonly logger?: LoggerService | false;
}
