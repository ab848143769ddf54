import { InvalidArgumentError, type RedlockOptions } from '../core/index.js';
import { checkKnown } from '../core/layers.js';
import { checkBusy, checkStatus } from './busy.js';
import { checkScheduleOptions } from './schedule-lock.options.js';
import type { RedlockModuleOptions } from './redlock-module-options.interface.js';

const UNAVAILABLE_KEYS: ReadonlySet<string> = new Set(['status']);

/**
 * Checks the Nest-only options and returns the client's options without them;
 * the client checks the rest when it is built. Either way a wrong option stops
 * the application at bootstrap with a message naming it.
 */
export function validateModuleOptions(options: RedlockModuleOptions): RedlockOptions {
  if (typeof options !== 'object' || options === null) {
    throw new InvalidArgumentError('RedlockModule options', 'an object with a `nodes` array', options);
  }
  const { controllerBusy, methodBusy, jobBusy, controllerUnavailable, logger, schedule, ...client } = options;
  checkBusy('controllerBusy', controllerBusy, false);
  checkBusy('methodBusy', methodBusy, false);
  checkBusy('jobBusy', jobBusy);
  checkScheduleOptions(schedule);
  if (controllerUnavailable !== undefined) {
    if (typeof controllerUnavailable !== 'object' || controllerUnavailable === null) {
      throw new InvalidArgumentError('controllerUnavailable', 'an object', controllerUnavailable);
    }
    checkKnown('controllerUnavailable', controllerUnavailable, UNAVAILABLE_KEYS);
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
