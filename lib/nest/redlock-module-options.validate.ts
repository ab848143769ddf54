import { InvalidArgumentError } from '../core/errors/invalid-argument.error.js';
import type { BusyOptions, RedlockModuleOptions } from './redlock-module-options.interface.js';

/**
 * Checks the Nest-only options; the client checks the rest when it is built.
 * Either way a wrong option stops the application at bootstrap with a message
 * naming it.
 */
export function validateModuleOptions(options: RedlockModuleOptions): RedlockModuleOptions {
  if (typeof options !== 'object' || options === null) {
    throw new InvalidArgumentError('RedlockModule options', 'an object with a `nodes` array', options);
  }
  checkBusy('controllerBusy', options.controllerBusy);
  checkBusy('methodBusy', options.methodBusy);
  return options;
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
  if (busy.status !== undefined && !(Number.isInteger(busy.status) && busy.status >= 400 && busy.status <= 599)) {
    throw new InvalidArgumentError(`${name}.status`, 'an HTTP error status (400-599)', busy.status);
  }
}
