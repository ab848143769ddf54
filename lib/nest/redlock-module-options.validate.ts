import { InvalidArgumentError } from '../core/errors/invalid-argument.error.js';
import type { RedlockOptions } from '../core/options.js';
import type { BusyOptions, RedlockModuleOptions } from './redlock-module-options.interface.js';

/**
 * Checks the Nest-only options and returns the client's options without them;
 * the client checks the rest when it is built. Either way a wrong option stops
 * the application at bootstrap with a message naming it.
 */
export function validateModuleOptions(options: RedlockModuleOptions): RedlockOptions {
  if (typeof options !== 'object' || options === null) {
    throw new InvalidArgumentError('RedlockModule options', 'an object with a `nodes` array', options);
  }
  const { controllerBusy, methodBusy, controllerUnavailable, logger, ...client } = options;
  checkBusy('controllerBusy', controllerBusy);
  checkBusy('methodBusy', methodBusy);
  if (controllerUnavailable !== undefined) {
    if (typeof controllerUnavailable !== 'object' || controllerUnavailable === null) {
      throw new InvalidArgumentError('controllerUnavailable', 'an object', controllerUnavailable);
    }
    checkStatus('controllerUnavailable.status', controllerUnavailable.status);
  }
  if (logger !== undefined && logger !== false && !isLogger(logger)) {
    throw new InvalidArgumentError('logger', 'false or a LoggerService (log, error and warn methods)', logger);
  }
  return client; // the Nest-only options are not the client's
}

function isLogger(logger: unknown): boolean {
  const candidate = logger as Record<string, unknown> | null;
  return typeof candidate === 'object' && candidate !== null && ['log', 'error', 'warn'].every((m) => typeof candidate[m] === 'function');
}

function checkStatus(name: string, status: number | undefined): void {
  if (status !== undefined && !(Number.isInteger(status) && status >= 400 && status <= 599)) {
    throw new InvalidArgumentError(name, 'an HTTP error status (400-599)', status);
  }
}

function checkBusy(name: string, busy: BusyOptions | undefined): void {
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
