import { Inject, Injectable, type LoggerService, type OnModuleInit } from '@nestjs/common';
import { formatResources } from '../core/layers.js';
import type { RedlockEvent } from './lock-events.js';
import { LockService } from './lock.service.js';
import { isLockService } from './locked.stand-in.js';
import type { RedlockModuleOptions } from './redlock-module-options.interface.js';
import { REDLOCK_MODULE_OPTIONS } from './redlock.module-definition.js';
import { redlockLogger } from './redlock.logger.js';

/**
 * Logs lock events through the module's logger (Nest's `Logger` under the
 * `Redlock` context unless the `logger` option says otherwise): a lost lock is
 * an error, failed extensions and acquisitions and node trouble are warnings,
 * busy and skipped runs are debug, acquired, extended and released locks are
 * verbose. Never a lock value or password: events do not carry them.
 */
@Injectable()
export class LockEventsLogger implements OnModuleInit {
  protected readonly logger: LoggerService | undefined;

  constructor(
    private readonly locks: LockService,
    @Inject(REDLOCK_MODULE_OPTIONS) options: RedlockModuleOptions,
  ) {
    this.logger = redlockLogger(options);
  }

  onModuleInit(): void {
    // Until `events$` completes, once the client closed: Nest runs the module's shutdown (which
    // closes the client) after every onModuleDestroy, and what shutdown does is logged too: the
    // locks released, a running job's lock lost at the end of the grace. (A test's stand-in for
    // LockService has no events to log.)
    if (this.logger && isLockService(this.locks)) this.locks.events$.subscribe((event) => this.log(event));
  }

  protected log(event: RedlockEvent): void {
    const logger = this.logger;
    if (!logger) return;
    switch (event.type) {
      case 'lost':
        return logger.error(`Lock ${event.lockId} on ${formatResources(event.resources)} lost (${event.reason})`);
      case 'extend-failed':
        return logger.warn(
          `Extending lock ${event.lockId} on ${formatResources(event.resources)} failed (${event.code}); ${event.validity} ms left`,
        );
      case 'acquire-failed':
        return logger.warn(
          `Acquiring ${formatResources(event.resources)} failed (${event.code}) after ${event.attempts} attempt(s)${event.reason ? `: ${event.reason}` : ''}`,
        );
      case 'node-error':
        return logger.warn(`Node ${event.node}: ${event.message}`);
      case 'node-hung':
        return logger.warn(`Node ${event.node} is not answering (silent for ${event.silentFor} ms): its votes count as no until it does`);
      case 'node-restarted':
        return logger.warn(`Node ${event.node} restarted: not counted for ${Math.round(event.excludedFor)} ms`);
      case 'busy':
        return logger.debug?.(`${formatResources(event.resources)} busy after ${event.attempts} attempt(s)`);
      case 'skipped':
        return logger.debug?.(`Skipped ${event.method}: ${formatResources(event.resources)} ${SKIPPED_BECAUSE[event.reason]}`);
      case 'acquired':
        return logger.verbose?.(
          `Acquired ${formatResources(event.resources)} as ${event.lockId} in ${event.elapsed.toFixed(1)} ms (token ${event.fencingToken ?? '-'})`,
        );
      case 'extended':
        return logger.verbose?.(`Extended ${event.lockId} (#${event.extensions}), ${event.validity} ms valid`);
      case 'released': {
        const expiresIn = this.locks.leftToExpire(event.lockId);
        return logger.verbose?.(
          expiresIn === undefined
            ? `Released ${event.lockId} after ${event.heldFor} ms`
            : `Run of ${event.lockId} ended after ${event.heldFor} ms; its keys expire in ${expiresIn} ms (lockAtLeastFor)`,
        );
      }
    }
  }
}

/** Why a `@Locked` run was skipped, as the log says it. */
const SKIPPED_BECAUSE = {
  busy: 'busy',
  unreachable: 'could not be locked (too few nodes answered)',
  closed: 'not locked: the application is shutting down',
} as const;
