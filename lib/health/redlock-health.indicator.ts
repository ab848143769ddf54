import { Injectable, type OnModuleInit } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { Redlock } from '../core/index.js';
import type { RedlockHealthDetails, RedlockHealthOptions, RedlockHealthResult } from './redlock-health.interface.js';

/**
 * A `@nestjs/terminus` health indicator for the Redlock client: `up` while a
 * quorum of nodes answers PING, with every node's state and latency in the
 * details. All nodes are pinged at once and the check never waits longer than
 * its timeout, so a hung node cannot hang `/health`. It needs nothing from
 * terminus at runtime: the result has terminus's `HealthIndicatorResult` shape
 * and a quorum lost gives `status: 'down'`, which `HealthCheckService` turns
 * into a 503.
 *
 * @example
 * @Controller('health')
 * class HealthController {
 *   constructor(private readonly health: HealthCheckService, private readonly redlock: RedlockHealthIndicator) {}
 *
 *   @Get()
 *   @HealthCheck()
 *   check() {
 *     return this.health.check([() => this.redlock.isHealthy('redlock', { timeout: 500 })]);
 *   }
 * }
 */
@Injectable()
export class RedlockHealthIndicator implements OnModuleInit {
  private client: Redlock | undefined;

  constructor(protected readonly moduleRef: ModuleRef) {}

  /** Finds the client at bootstrap, so that a missing `RedlockModule` stops the application. */
  onModuleInit(): void {
    this.client = this.resolveClient();
  }

  /**
   * Pings every node; `status: 'up'` while at least a quorum answered in time.
   * Never rejects for a node's failure (only for an invalid `timeout`).
   */
  async isHealthy<const Key extends string = 'redlock'>(
    key: Key = 'redlock' as Key,
    options: RedlockHealthOptions = {},
  ): Promise<RedlockHealthResult<Key>> {
    const client = (this.client ??= this.resolveClient());
    const nodes = await client.ping(options.timeout);
    const up = nodes.filter((n) => n.status === 'up').length;
    const details: RedlockHealthDetails = {
      status: up >= client.quorum ? 'up' : 'down',
      quorum: client.quorum,
      up,
      total: nodes.length,
      nodes: Object.fromEntries(nodes.map(({ node, ...state }) => [node, state])),
    };
    if (details.status === 'down') {
      details.message = `${up} of ${nodes.length} Redlock nodes up; a lock needs ${client.quorum}`;
    }
    return { [key]: details } as RedlockHealthResult<Key>;
  }

  /** The application's `Redlock` client, wherever `RedlockModule` was imported. */
  protected resolveClient(): Redlock {
    try {
      return this.moduleRef.get(Redlock, { strict: false });
    } catch {
      throw new Error('RedlockHealthIndicator found no Redlock client: import RedlockModule.forRoot(...) in the application');
    }
  }
}
