import { Controller, Param, Post } from '@nestjs/common';
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
}
