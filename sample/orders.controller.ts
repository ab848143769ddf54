import { ConflictException, Controller, Get, HttpCode, Param, Post } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { LockService, Locked } from '../lib/index.js';
import { INSTANCE } from './instance.js';

export interface Order {
  readonly id: string;
  readonly status: 'pending' | 'paid';
  readonly paidAt?: string;
  readonly paidBy?: string;
  /** Token of the lock the payment was written under: a real store would reject older tokens. */
  readonly fencingToken?: number;
}

@Controller('orders')
export class OrdersController {
  /** Stands in for a database; every order exists, pending until paid. */
  private readonly orders = new Map<string, Order>();

  constructor(private readonly locks: LockService) {}

  @Get(':id')
  async get(@Param('id') id: string): Promise<Order> {
    return this.load(id);
  }

  /**
   * Read-modify-write under `order:<id>`: a second payment of the same order,
   * on this instance or another one, gets 409 while this one runs.
   */
  @Post(':id/pay')
  @HttpCode(200)
  @Locked('order:{params.id}', 5000)
  async pay(@Param('id') id: string): Promise<Order> {
    const order = await this.load(id);
    if (order.status === 'paid') throw new ConflictException(`Order ${id} is already paid`);

    await sleep(300); // the payment provider
    const lock = this.locks.current()!; // taken by @Locked, on the id after pipes
    lock.signal.throwIfAborted(); // lost the lock meanwhile: do not write

    const paid: Order = {
      ...order,
      status: 'paid',
      paidAt: new Date().toISOString(),
      paidBy: INSTANCE,
      fencingToken: lock.fencingToken,
    };
    await this.save(paid);
    return paid;
  }

  private async load(id: string): Promise<Order> {
    await sleep(5);
    return this.orders.get(id) ?? { id, status: 'pending' };
  }

  private async save(order: Order): Promise<void> {
    await sleep(5);
    this.orders.set(order.id, order);
  }
}
