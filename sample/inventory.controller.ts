import { BadRequestException, Body, ConflictException, Controller, Get, HttpCode, Param, Post } from '@nestjs/common';
import { ResourceBusyError } from '../lib/index.js';
import { InventoryService, type Restock } from './inventory.service.js';

@Controller('inventory')
export class InventoryController {
  constructor(private readonly inventory: InventoryService) {}

  @Get(':sku')
  get(@Param('sku') sku: string): { sku: string; level: number } {
    return { sku, level: this.inventory.level(sku) };
  }

  /** `curl -X POST localhost:3000/inventory/apple/restock -H 'content-type: application/json' -d '{"quantity":5}'` */
  @Post(':sku/restock')
  @HttpCode(200)
  async restock(@Param('sku') sku: string, @Body() body: { quantity?: unknown } = {}): Promise<Restock> {
    const quantity = body?.quantity ?? 10;
    if (typeof quantity !== 'number' || !Number.isInteger(quantity) || quantity < 1) {
      throw new BadRequestException('quantity must be a positive integer');
    }
    try {
      return await this.inventory.restock(sku, quantity);
    } catch (error) {
      if (error instanceof ResourceBusyError) throw new ConflictException(`Inventory of ${sku} is busy, try again`);
      throw error;
    }
  }
}
