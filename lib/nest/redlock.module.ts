import { Module, type OnApplicationShutdown } from '@nestjs/common';
import { APP_INTERCEPTOR, DiscoveryModule } from '@nestjs/core';
import { Redlock } from '../core/index.js';
import { LockService } from './lock.service.js';
import { isLockService } from './locked.stand-in.js';
import { LockEventsLogger } from './lock-events.logger.js';
import { LockedExplorer } from './locked.explorer.js';
import { ScheduleLocker } from './schedule-locker.js';
import { RedlockTelemetry } from './redlock.telemetry.js';
import { LockedInterceptor } from './locked.interceptor.js';
import { ShutdownHooksCheck } from './shutdown-hooks.check.js';
import { validateModuleOptions } from './redlock-module-options.validate.js';
import type { RedlockModuleOptions } from './redlock-module-options.interface.js';
import { REDLOCK_CLIENT } from './redlock.constants.js';
import { ConfigurableModuleClass, REDLOCK_MODULE_OPTIONS } from './redlock.module-definition.js';

/**
 * Registers the quorum client (injectable as `Redlock` and `REDLOCK_CLIENT`),
 * `LockService` and the `@Locked` interceptor.
 *
 * @example
 * RedlockModule.forRoot({ nodes: ['redis://a:6379', 'redis://b:6379', 'redis://c:6379'], isGlobal: true })
 * RedlockModule.forRootAsync({ inject: [ConfigService], useFactory: (c: ConfigService) => ({ nodes: c.get('LOCK_NODES').split(',') }) })
 */
@Module({
  imports: [DiscoveryModule],
  providers: [
    {
      provide: Redlock,
      inject: [REDLOCK_MODULE_OPTIONS],
      useFactory: (options: RedlockModuleOptions) => new Redlock(validateModuleOptions(options)),
    },
    { provide: REDLOCK_CLIENT, useExisting: Redlock },
    LockService,
    LockedExplorer,
    ScheduleLocker,
    LockEventsLogger,
    RedlockTelemetry,
    ShutdownHooksCheck,
    { provide: APP_INTERCEPTOR, useClass: LockedInterceptor },
  ],
  exports: [Redlock, REDLOCK_CLIENT, LockService],
})
export class RedlockModule extends ConfigurableModuleClass implements OnApplicationShutdown {
  constructor(
    private readonly client: Redlock,
    private readonly locks: LockService,
  ) {
    super();
  }

  /** Releases the locks still held, closes the connections the client opened, then ends `events$`. */
  async onApplicationShutdown(): Promise<void> {
    await this.client.close();
    if (isLockService(this.locks)) this.locks.complete(); // not a test's stand-in
  }
}
