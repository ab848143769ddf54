import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Controller, Injectable, type INestApplication, Param, ParseIntPipe, Post } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { LockService, Locked, RedlockModule, ofLockEvent, type RedlockEvent } from '../../lib/index.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';
import { TEST_NODE_TIMEOUT } from '../support/timeouts.js';

/**
 * A gate the locked bodies wait behind. It opens when `open()` says so (the
 * test's own event: enough answers came back, or enough bodies got in), never
 * after a delay, so the outcome does not depend on how fast requests arrive.
 */
class Gate {
  readonly entered: unknown[] = [];
  readonly settled: unknown[] = [];
  private release!: () => void;
  private readonly opened = new Promise<void>((resolve) => (this.release = resolve));

  constructor(private readonly openWhen: (gate: Gate) => boolean) {}

  async enter(who: unknown): Promise<void> {
    this.entered.push(who);
    this.check();
    await this.opened;
  }

  settle(what: unknown): void {
    this.settled.push(what);
    this.check();
  }

  private check(): void {
    if (this.openWhen(this)) this.release();
  }
}

let payGate: Gate;
let argsGate: Gate;
let tenantGate: Gate;
const paid = new Map<number, number>();

@Controller('orders')
class OrdersController {
  // The README's quick-start pattern, with a pipe as users write it.
  @Post(':id/pay')
  @Locked('order:{params.id}', 5000)
  async pay(@Param('id', ParseIntPipe) id: number) {
    await payGate.enter(id);
    paid.set(id, (paid.get(id) ?? 0) + 1);
    return { paid: id };
  }

  @Post(':id/refund')
  @Locked('refund:{args.0}', 5000)
  async refund(@Param('id', ParseIntPipe) id: number) {
    await argsGate.enter(id);
    return { refunded: id };
  }
}

@Injectable()
class Tenants {
  @Locked('tenant:{args.0}:order:{args.1}', 5000, { busy: { mode: 'throw' } })
  async touch(tenant: string, order: string): Promise<string> {
    await tenantGate.enter([tenant, order]);
    return `${tenant}/${order}`;
  }
}

let fleet: RedisFleet;
let app: INestApplication;
let locks: LockService;
const events: RedlockEvent[] = [];

beforeAll(async () => {
  fleet = await startFleet(3);
  const moduleRef = await Test.createTestingModule({
    imports: [RedlockModule.forRoot({ nodes: fleet.urls, nodeTimeout: TEST_NODE_TIMEOUT })],
    controllers: [OrdersController],
    providers: [Tenants],
  }).compile();
  app = moduleRef.createNestApplication({ logger: false });
  await app.init();
  locks = app.get(LockService);
  locks.events$.subscribe((e) => events.push(e));
});

afterAll(async () => {
  await app?.close();
  await fleet?.stop();
});

/** Sends the three spellings of order 42 at once; the gate opens once two answered or all three got in. */
async function threeSpellings(path: (id: string) => string, gate: () => Gate): Promise<number[]> {
  const responses = await Promise.all(
    ['42', '042', '0042'].map((id) =>
      request(app.getHttpServer())
        .post(path(id))
        .then((r) => {
          gate().settle(r.status);
          return r.status;
        }),
    ),
  );
  return responses.sort();
}

describe('@Locked keys on controllers are built from the arguments after pipes', () => {
  it("'{params.id}' is the ParseIntPipe value: /orders/42, /042 and /0042 pay order 42 once, the others answer 409", async () => {
    payGate = new Gate((g) => g.settled.length >= 2 || g.entered.length >= 3);
    const statuses = await threeSpellings(
      (id) => `/orders/${id}/pay`,
      () => payGate,
    );
    expect(statuses).toEqual([201, 409, 409]);
    expect(paid.get(42)).toBe(1);
    const acquired = events.filter(ofLockEventType('acquired')).map((e) => e.resources);
    expect(acquired).toContainEqual(['order:42']);
    expect(acquired).not.toContainEqual(['order:042']);
  });

  it("'{args.0}' on a controller is the handler's first argument after its pipe", async () => {
    argsGate = new Gate((g) => g.settled.length >= 2 || g.entered.length >= 3);
    const statuses = await threeSpellings(
      (id) => `/orders/${id}/refund`,
      () => argsGate,
    );
    expect(statuses).toEqual([201, 409, 409]);
    expect(argsGate.entered).toEqual([42]);
  });
});

describe('@Locked templates with several placeholders', () => {
  it('give distinct keys to distinct values: tenant a + order b:order:c and tenant a:order:b + order c both run at once', async () => {
    const tenants = app.get(Tenants);
    tenantGate = new Gate((g) => g.entered.length >= 2 || g.settled.length >= 1);
    const settle = (p: Promise<string>) =>
      p.then(
        (value) => (tenantGate.settle(value), value),
        (error: Error) => (tenantGate.settle(error.name), error.name),
      );
    const results = await Promise.all([settle(tenants.touch('a', 'b:order:c')), settle(tenants.touch('a:order:b', 'c'))]);
    expect(results).toEqual(['a/b:order:c', 'a:order:b/c']);
  });
});

function ofLockEventType<T extends RedlockEvent['type']>(type: T) {
  return (e: RedlockEvent): e is Extract<RedlockEvent, { type: T }> => e.type === type;
}
void ofLockEvent;
