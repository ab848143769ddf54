import { InvalidArgumentError } from '../core/index.js';
import type { BusyOptions } from './redlock-module-options.interface.js';

/** A busy resource waits this long by default in `wait` mode, ms. */
const DEFAULT_WAIT = 5000;

/** What a `@Locked` call does when its resource is busy, every default applied. */
export interface ResolvedBusy {
  /** Controller handlers answer their caller; other methods (cron, interval, providers) can be skipped. */
  readonly kind: 'controller' | 'method';
  readonly mode: 'skip' | 'throw' | 'wait';
  /** ms to wait in `wait` mode. */
  readonly wait: number;
  /** What `wait` does once the wait is over: controllers answer, other methods skip. */
  readonly afterWait: 'throw' | 'skip';
  /** HTTP status of a busy controller resource. */
  readonly status: number;
}

/**
 * The one place busy settings are resolved: the module's default for the kind
 * of method (controller handlers throw 409, other methods skip), then the
 * method's own `busy`. Both were checked where they were given.
 */
export function resolveBusy(kind: 'controller' | 'method', moduleDefault?: BusyOptions, own?: BusyOptions): ResolvedBusy {
  const base: BusyOptions = kind === 'controller' ? { mode: 'throw', status: 409 } : { mode: 'skip' };
  const busy = { ...base, ...moduleDefault, ...own };
  return {
    kind,
    mode: busy.mode ?? 'skip',
    wait: busy.wait ?? DEFAULT_WAIT,
    afterWait: kind === 'controller' ? 'throw' : 'skip',
    status: busy.status ?? 409,
  };
}

/** Checks busy settings where they are given: module options at bootstrap, `@Locked` at decoration. */
export function checkBusy(name: string, busy: BusyOptions | undefined): void {
  if (busy === undefined) return;
  if (typeof busy !== 'object' || busy === null) throw new InvalidArgumentError(name, 'an object', busy);
  if (busy.mode !== undefined && !['skip', 'throw', 'wait'].includes(busy.mode)) {
    throw new InvalidArgumentError(`${name}.mode`, "'skip', 'throw' or 'wait'", busy.mode);
  }
  if (busy.wait !== undefined && !(Number.isInteger(busy.wait) && busy.wait > 0)) {
    throw new InvalidArgumentError(`${name}.wait`, 'a positive integer (ms)', busy.wait);
  }
  checkStatus(`${name}.status`, busy.status);
}

/** An HTTP error status, if given. */
export function checkStatus(name: string, status: number | undefined): void {
  if (status !== undefined && !(Number.isInteger(status) && status >= 400 && status <= 599)) {
    throw new InvalidArgumentError(name, 'an HTTP error status (400-599)', status);
  }
}
