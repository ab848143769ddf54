import { Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import type { Subscription } from 'rxjs';
import { LockService, type RedlockEvent } from '../lib/index.js';

/** Logs every lock event of this instance (events carry lock ids and tokens, never lock values). */
@Injectable()
export class LockEventsLogger implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('LockEvents');
  private subscription?: Subscription;

  constructor(private readonly locks: LockService) {}

  onModuleInit(): void {
    this.subscription = this.locks.events$.subscribe((event) => this.log(event));
  }

  onModuleDestroy(): void {
    this.subscription?.unsubscribe();
  }

  private log(event: RedlockEvent): void {
    const on = 'resources' in event ? event.resources.join(',') : '';
    switch (event.type) {
      case 'acquired':
        return this.logger.log(
          `acquired ${on} lock=${event.lockId} fencingToken=${event.fencingToken} validity=${event.validity}ms attempts=${event.attempts}`,
        );
      case 'extended':
        return this.logger.log(`extended ${on} lock=${event.lockId} ttl=${event.ttl}ms (#${event.extensions})`);
      case 'released':
        return this.logger.log(`released ${on} lock=${event.lockId} after ${event.heldFor}ms (${event.confirmed} node(s) confirmed)`);
      case 'busy':
        return this.logger.log(`busy ${on} after ${event.attempts} attempt(s)`);
      case 'skipped':
        return this.logger.log(`skipped ${event.method}: ${on} is held elsewhere`);
      case 'extend-failed':
        return this.logger.warn(`extend-failed ${on} lock=${event.lockId} ${event.code}, still valid ${event.validity}ms`);
      case 'acquire-failed':
        return this.logger.warn(`acquire-failed ${on} ${event.code} after ${event.attempts} attempt(s)`);
      case 'lost':
        return this.logger.error(`lost ${on} lock=${event.lockId}: ${event.reason}`);
      case 'node-error':
        return this.logger.warn(`node-error ${event.node}: ${event.message}`);
      case 'node-restarted':
        return this.logger.warn(`node-restarted ${event.node}: its votes are not counted for ${event.excludedFor}ms`);
      default:
        // Event types added in later versions: logged as they come.
        return this.logger.log(JSON.stringify(event));
    }
  }
}
