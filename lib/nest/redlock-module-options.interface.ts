import type { LoggerService } from '@nestjs/common';
import type { RedlockOptions } from '../core/index.js';

/** What a locked method does when its resource is held by someone else. */
export interface BusyOptions {
  /**
   * `skip` returns `undefined` without running (and emits `skipped`); `throw`
   * rejects (HTTP: an exception with `status`); `wait` retries for up to `wait`
   * ms, then behaves as `throw` on controllers and `skip` elsewhere.
   */
  readonly mode?: 'skip' | 'throw' | 'wait';
  /** Milliseconds to wait for the resource when `mode` is `wait`. Default 5000. */
  readonly wait?: number;
  /** HTTP status answered on a busy controller resource. Default 409. */
  readonly status?: number;
}

/** Options of `RedlockModule.forRoot` / `forRootAsync`. */
export interface RedlockModuleOptions extends RedlockOptions {
  /** Busy behaviour of `@Locked` on HTTP/RPC/WS handlers. Default `{ mode: 'throw', status: 409 }`. */
  readonly controllerBusy?: BusyOptions;
  /** Busy behaviour of `@Locked` on cron, interval, timeout and provider methods. Default `{ mode: 'skip' }`. */
  readonly methodBusy?: BusyOptions;
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
