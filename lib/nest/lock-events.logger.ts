import { Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import type { Subscription } from 'rxjs';
import { formatResources } from '../core/errors/resource-busy.error.js';
import type { RedlockEvent } from './lock-events.js';
import { LockService } from './lock.service.js';

/**
 * Logs lock events through Nest's `Logger` under the `Redlock` context: a lost
 * lock is an error, failed extensions and node trouble are warnings, busy and
 * skipped runs are debug, the rest verbose. Never a lock value or password:
 * events do not carry them.
 */
@Injectable()
export class LockEventsLogger implements OnModuleInit, OnModuleDestroy {
  protected readonly logger = new Logger('Redlock');
  private subscription: Subscription | undefined;

  constructor(private readonly locks: LockService) {}

  onModuleInit(): void {
    this.subscription = this.locks.events$.subscribe((event) => this.log(event));
  }

  onModuleDestroy(): void {
    this.subscription?.unsubscribe();
  }

  protected log(event: RedlockEvent): void {
    switch (event.type) {
      case 'lost':
        return this.logger.error(`Lock ${event.lockId} on ${formatResources(event.resources)} lost (${event.reason})`);
      case 'extend-failed':
        return this.logger.warn(
          `Extending lock ${event.lockId} on ${formatResources(event.resources)} failed (${event.code}); ${event.validity} ms left`,
        );
      case 'acquire-failed':
        return this.logger.warn(`Acquiring ${formatResources(event.resources)} failed (${event.code}) after ${event.attempts} attempt(s)`);
      case 'node-error':
        return this.logger.warn(`Node ${event.node}: ${event.message}`);
      case 'node-restarted':
        return this.logger.warn(`Node ${event.node} restarted: not counted for ${Math.round(event.excludedFor)} ms`);
      case 'busy':
        return this.logger.debug(`${formatResources(event.resources)} busy after ${event.attempts} attempt(s)`);
      case 'skipped':
        return this.logger.debug(`Skipped ${event.method}: ${formatResources(event.resources)} busy`);
      case 'acquired':
        return this.logger.verbose(
          `Acquired ${formatResources(event.resources)} as ${event.lockId} in ${event.elapsed.toFixed(1)} ms (token ${event.fencingToken ?? '-'})`,
        );
      case 'extended':
        return this.logger.verbose(`Extended ${event.lockId} (#${event.extensions}), ${event.validity} ms valid`);
      case 'released':
        return this.logger.verbose(`Released ${event.lockId} after ${event.heldFor} ms`);
    }
  }
}
