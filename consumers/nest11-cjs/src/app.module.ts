import { Module, type DynamicModule } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { RedlockModule, type NodeSpec } from 'nest-redlock';
import { ItemsController } from './items.controller';
import { TickJob } from './tick.job';

@Module({})
export class AppModule {
  static forNodes(nodes: NodeSpec[]): DynamicModule {
    return {
      module: AppModule,
      imports: [ScheduleModule.forRoot(), RedlockModule.forRoot({ nodes, prefix: 'consumer:' })],
      controllers: [ItemsController],
      providers: [TickJob],
    };
  }
}
