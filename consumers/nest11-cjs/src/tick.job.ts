import { Injectable } from '@nestjs/common';
import { Cron } from '@nestjs/schedule';
import { LockService, Locked } from 'nest-redlock';

export const TICK_RESOURCE = 'tick:every-second';

@Injectable()
export class TickJob {
  /** For each run: the resources of the lock it ran under (empty if none). */
  readonly runs: string[][] = [];

  constructor(private readonly locks: LockService) {}

  @Cron('* * * * * *', { name: 'tick' })
  @Locked(TICK_RESOURCE, 5_000)
  async tick(): Promise<void> {
    this.runs.push([...(this.locks.current()?.resources ?? [])]);
  }
}
