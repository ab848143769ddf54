import { Injectable } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { LockService } from '../lib/index.js';

export interface Restock {
  readonly sku: string;
  readonly before: number;
  readonly after: number;
  readonly fencingToken: number | undefined;
}

@Injectable()
export class InventoryService {
  /** Stands in for a database. */
  private readonly stock = new Map<string, number>();

  constructor(private readonly locks: LockService) {}

  level(sku: string): number {
    return this.stock.get(sku) ?? 0;
  }

  /**
   * Adds stock under `inventory:<sku>`. Unlike the `@Locked` endpoint, a busy
   * sku is waited for (the client's retries), so concurrent restocks queue up
   * instead of failing; `ResourceBusyError` only after the retries run out.
   */
  restock(sku: string, quantity: number): Promise<Restock> {
    return this.locks.using(`inventory:${sku}`, 5000, async (lock) => {
      const before = this.level(sku);
      await sleep(250); // the supplier's confirmation
      lock.signal.throwIfAborted();
      const after = before + quantity;
      this.stock.set(sku, after);
      return { sku, before, after, fencingToken: lock.fencingToken };
    });
  }
}
