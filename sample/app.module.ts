import { Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { InventoryController } from './inventory.controller.js';
import { InventoryService } from './inventory.service.js';
import { LockEventsLogger } from './lock-events.logger.js';
import { OrdersController } from './orders.controller.js';
import { redlockModule } from './redlock-nodes.js';
import { ReportJob } from './report.job.js';

@Module({
  imports: [ScheduleModule.forRoot(), redlockModule()],
  controllers: [OrdersController, InventoryController],
  providers: [InventoryService, ReportJob, LockEventsLogger],
})
export class AppModule {}
