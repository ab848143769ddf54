import { Controller, Get, Param, Post, Put } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { Locked } from 'nest-redlock';

@Controller('items')
export class ItemsController {
  /** One update per item at a time: a second caller gets 409 while the first holds `item:<id>`. */
  @Post(':id')
  @Locked('item:{params.id}', 5_000)
  async update(@Param('id') id: string): Promise<{ id: string; updated: true }> {
    await sleep(500); // long enough for concurrent callers to find the lock held
    return { id, updated: true };
  }

  /** At most two exports per tenant at once, across every instance: a third caller gets 409. */
  @Post(':tenant/export')
  @Locked('export:{params.tenant}', 5_000, { limit: 2 })
  async export(@Param('tenant') tenant: string): Promise<{ tenant: string; exported: true }> {
    await sleep(500);
    return { tenant, exported: true };
  }

  /** Readers of the catalog share it; a rebuild is alone (409 while readers are in, and readers get 409 during it). */
  @Get('catalog')
  @Locked('catalog', 5_000, { mode: 'read' })
  async catalog(): Promise<{ read: true }> {
    await sleep(500);
    return { read: true };
  }

  @Put('catalog')
  @Locked('catalog', 5_000, { mode: 'write' })
  async rebuild(): Promise<{ rebuilt: true }> {
    await sleep(500);
    return { rebuilt: true };
  }
}
