import { Inject, Injectable, type LoggerService, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import type { RedlockModuleOptions } from './redlock-module-options.interface.js';
import { REDLOCK_MODULE_OPTIONS } from './redlock.module-definition.js';
import { redlockLogger } from './redlock.logger.js';

/**
 * Warns once, just after bootstrap, when nothing in the process listens for
 * SIGTERM: a deploy's SIGTERM then ends the process without Nest's shutdown
 * hooks, so held locks stay on the nodes until their ttl runs out. Checked on
 * the next turn of the event loop, not in `onApplicationBootstrap` itself:
 * `NestFactory.createApplicationContext` bootstraps before the caller can call
 * `enableShutdownHooks()`. Any SIGTERM listener counts (the check cannot tell
 * Nest's from another), so it never warns wrongly about an app that handles the
 * signal itself; it cannot see hooks enabled later than that turn. Not run
 * when `NODE_ENV` is `test`.
 */
@Injectable()
export class ShutdownHooksCheck implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger: LoggerService | undefined;
  private pending: NodeJS.Immediate | undefined;

  constructor(@Inject(REDLOCK_MODULE_OPTIONS) options: RedlockModuleOptions) {
    this.logger = redlockLogger(options);
  }

  onApplicationBootstrap(): void {
    // Test runners (jest sets NODE_ENV=test) create applications without hooks on purpose.
    if (!this.logger || process.env.NODE_ENV === 'test') return;
    this.pending = setImmediate(() => {
      this.pending = undefined;
      if (process.listenerCount('SIGTERM') > 0) return;
      this.logger?.warn(
        'No SIGTERM handler: on SIGTERM this process exits without releasing its locks, which stay on the nodes ' +
          'until their ttl runs out. Call app.enableShutdownHooks() after creating the application.',
      );
    });
    this.pending.unref();
  }

  onApplicationShutdown(): void {
    if (this.pending) clearImmediate(this.pending);
  }
}
