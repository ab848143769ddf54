import { Injectable, Logger } from '@nestjs/common';
import { Cron, CronExpression } from '@nestjs/schedule';
import { setTimeout as sleep } from 'node:timers/promises';
import { LockService, Locked } from '../lib/index.js';
import { INSTANCE } from './instance.js';

const TICK = 5000;

@Injectable()
export class ReportJob {
  private readonly logger = new Logger(ReportJob.name);

  constructor(private readonly locks: LockService) {}

  /**
   * Every instance's scheduler fires each tick; the one that takes the lock
   * runs, the others skip. `lockAtLeastFor` keeps the lock 3 s even though the
   * run takes 0.2 s, so an instance whose clock is a little late cannot run
   * the same tick again.
   */
  @Cron(CronExpression.EVERY_5_SECONDS)
  @Locked('report:every-5s', 10_000, { lockAtLeastFor: 3000 })
  async report(): Promise<void> {
    const tick = new Date(Math.round(Date.now() / TICK) * TICK).toISOString();
    const token = this.locks.current()?.fencingToken;
    this.logger.log(`report run tick=${tick} instance=${INSTANCE} pid=${process.pid} fencingToken=${token}`);
    await sleep(200); // build the report
  }
}
