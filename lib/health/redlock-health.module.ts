import { Module } from '@nestjs/common';
import { RedlockHealthIndicator } from './redlock-health.indicator.js';

/**
 * Provides `RedlockHealthIndicator`. The client is found wherever
 * `RedlockModule` was imported, global or not.
 *
 * @example
 * @Module({
 *   imports: [RedlockModule.forRoot({ nodes }), TerminusModule, RedlockHealthModule],
 *   controllers: [HealthController],
 * })
 * class AppModule {}
 */
@Module({
  providers: [RedlockHealthIndicator],
  exports: [RedlockHealthIndicator],
})
export class RedlockHealthModule {}
