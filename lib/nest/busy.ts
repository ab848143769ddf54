import { InvalidArgumentError } from '../core/index.js';
import { checkKnown } from '../core/layers.js';
import type { BusyContext, BusyOptions } from './redlock-module-options.interface.js';

/** A busy resource waits this long by default in `wait` mode, ms. */
const DEFAULT_WAIT = 5000;
/** A busy queue job is moved to delayed for this long first, ms; each busy retry doubles it up to `maxDelay`. */
const DEFAULT_DELAY = 1000;
const DEFAULT_MAX_DELAY = 30_000;

/** Which road a `@Locked` call came by. */
export type LockedKind = 'controller' | 'method' | 'job';

/** What a `@Locked` call does when its resource is busy, every default applied. */
export interface ResolvedBusy {
  /** Controller handlers answer their caller; queue jobs are retried later; other methods (cron, interval, providers) can be skipped. */
  readonly kind: LockedKind;
  readonly mode: 'skip' | 'throw' | 'wait' | 'delay';
  /** ms to wait in `wait` mode. */
  readonly wait: number;
  /** What `wait` does once the wait is over: controllers answer, queue jobs are delayed, other methods skip. */
  readonly afterWait: 'throw' | 'skip' | 'delay';
  /** HTTP status of a busy controller resource. */
  readonly status: number;
  /** Queue jobs in `delay` mode: the first delay and the most a busy retry is delayed, ms. */
  readonly delay: number;
  readonly maxDelay: number;
  /** The caller's own busy error, if given. */
  readonly exception: ((context: BusyContext) => unknown) | undefined;
}

const BASES: Record<LockedKind, BusyOptions> = {
  controller: { mode: 'throw', status: 409 },
  method: { mode: 'skip' },
  job: { mode: 'delay' },
};
const AFTER_WAIT: Record<LockedKind, ResolvedBusy['afterWait']> = { controller: 'throw', method: 'skip', job: 'delay' };

/**
 * The one place busy settings are resolved: the module's default for the kind
 * of method (controller handlers throw 409, queue jobs are delayed, other
 * methods skip), then the method's own `busy`. Both were checked where they
 * were given; `delay` is for queue jobs only, which only a call can tell.
 */
export function resolveBusy(kind: LockedKind, moduleDefault?: BusyOptions, own?: BusyOptions): ResolvedBusy {
  const busy: BusyOptions = Object.assign({}, BASES[kind], moduleDefault, own);
  const mode = busy.mode ?? 'skip';
  if (mode === 'delay' && kind !== 'job') {
    throw new InvalidArgumentError(
      '@Locked busy.mode',
      "'skip', 'throw' or 'wait' ('delay' is for a @nestjs/bullmq WorkerHost's process(job))",
      mode,
    );
  }
  return {
    kind,
    mode,
    wait: busy.wait ?? DEFAULT_WAIT,
    afterWait: AFTER_WAIT[kind],
    status: busy.status ?? 409,
    delay: busy.delay ?? DEFAULT_DELAY,
    maxDelay: busy.maxDelay ?? Math.max(DEFAULT_MAX_DELAY, busy.delay ?? 0),
    exception: busy.exception,
  };
}

/** Whether a busy (or, for methods and jobs, unreachable) call ends without running instead of rejecting. */
export function skipsWhenBusy(busy: ResolvedBusy): boolean {
  const mode = busy.mode === 'wait' ? busy.afterWait : busy.mode;
  return mode === 'skip' || mode === 'delay';
}

const BUSY_KEYS: ReadonlySet<string> = new Set<keyof BusyOptions>(['mode', 'wait', 'status', 'delay', 'maxDelay', 'exception']);

/**
 * Checks busy settings where they are given: module options at bootstrap,
 * `@Locked` at decoration. `delay` is a mode of queue jobs only.
 */
export function checkBusy(name: string, busy: BusyOptions | undefined, delay = true): void {
  if (busy === undefined) return;
  if (typeof busy !== 'object' || busy === null) throw new InvalidArgumentError(name, 'an object', busy);
  checkKnown(name, busy, BUSY_KEYS);
  const modes = delay ? ['skip', 'throw', 'wait', 'delay'] : ['skip', 'throw', 'wait'];
  if (busy.mode !== undefined && !modes.includes(busy.mode)) {
    const expected = modes.map((m) => `'${m}'`);
    throw new InvalidArgumentError(`${name}.mode`, `${expected.slice(0, -1).join(', ')} or ${expected.at(-1)}`, busy.mode);
  }
  for (const field of ['wait', 'delay', 'maxDelay'] as const) {
    const value = busy[field];
    if (value !== undefined && !(Number.isInteger(value) && value > 0)) {
      throw new InvalidArgumentError(`${name}.${field}`, 'a positive integer (ms)', value);
    }
  }
  if (busy.exception !== undefined && typeof busy.exception !== 'function') {
    throw new InvalidArgumentError(`${name}.exception`, 'a function (context) => error', busy.exception);
  }
  checkStatus(`${name}.status`, busy.status);
}

/** An HTTP error status, if given. */
export function checkStatus(name: string, status: number | undefined): void {
  if (status !== undefined && !(Number.isInteger(status) && status >= 400 && status <= 599)) {
    throw new InvalidArgumentError(name, 'an HTTP error status (400-599)', status);
  }
}
