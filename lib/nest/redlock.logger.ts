import { Logger, type LoggerService } from '@nestjs/common';
import type { RedlockModuleOptions } from './redlock-module-options.interface.js';

/**
 * The logger the module writes to: Nest's `Logger` under the `Redlock`
 * context by default, the `logger` option when it is one, none when it is `false`.
 */
export function redlockLogger(options: Pick<RedlockModuleOptions, 'logger'>): LoggerService | undefined {
  if (options.logger === false) return undefined;
  return options.logger ?? new Logger('Redlock');
}
