import { Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { RedlockModule } from '../lib/index.js';
import { InventoryController } from './inventory.controller.js';
import { InventoryService } from './inventory.service.js';
import { LockEventsLogger } from './lock-events.logger.js';
import { OrdersController } from './orders.controller.js';
import { ReportJob } from './report.job.js';

/** `REDLOCK_NODES=redis://127.0.0.1:7001,redis://127.0.0.1:7002,...` (the launchers set it). */
function nodesFromEnv(): string[] {
  const nodes = (process.env.REDLOCK_NODES ?? '')
    .split(',')
    .map((url) => url.trim())
    .filter(Boolean);
  if (nodes.length === 0) {
    throw new Error('REDLOCK_NODES is not set: give comma-separated redis URLs, or start the sample with `npm run sample`');
  }
  return nodes;
}

@Module({
  imports: [
    ScheduleModule.forRoot(),
    RedlockModule.forRootAsync({
      useFactory: () => ({ nodes: nodesFromEnv(), prefix: 'sample:', ttl: 10_000 }),
    }),
  ],
  controllers: [OrdersController, InventoryController],
  providers: [InventoryService, ReportJob, LockEventsLogger],
})
export class AppModule {}
