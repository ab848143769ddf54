import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable, Module, type INestApplicationContext } from '@nestjs/common';
import { CommandBus, CommandHandler, CqrsModule, EventBus, EventsHandler, type ICommandHandler, type IEventHandler } from '@nestjs/cqrs';
import { EventEmitter2, EventEmitterModule, OnEvent } from '@nestjs/event-emitter';
import { Test } from '@nestjs/testing';
import { filter, firstValueFrom } from 'rxjs';
import { LockService, Locked, RedlockModule, ofLockEvent, type Lock } from '../../lib/index.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';
import { TEST_NODE_TIMEOUT } from '../support/timeouts.js';
import { until } from '../support/until.js';

// A call a locked call starts and does not wait for (an event handler, a saga's command)
// runs under the caller's lock: its resource is already held by the chain. The lock must
// then stay until that call settles too, or a second caller runs beside it.

/** A door the test opens: handlers wait at it, and say when they reached it. */
class Door {
  private open!: () => void;
  private reached!: () => void;
  readonly opened = new Promise<void>((resolve) => (this.open = resolve));
  readonly isReached = new Promise<void>((resolve) => (this.reached = resolve));
  inside = 0;
  most = 0;

  async pass(): Promise<void> {
    this.inside++;
    this.most = Math.max(this.most, this.inside);
    this.reached();
    await this.opened;
    this.inside--;
  }

  openNow(): void {
    this.open();
  }
}

const doors = new Map<string, Door>();
const doorFor = (id: string): Door => doors.get(id) ?? doors.set(id, new Door()).get(id)!;

class CreateOrder {
  constructor(readonly id: string) {}
}
class OrderCreated {
  constructor(readonly id: string) {}
}

@CommandHandler(CreateOrder)
class CreateOrderHandler implements ICommandHandler<CreateOrder> {
  constructor(private readonly events: EventBus) {}

  // Publishing last, as an aggregate's commit() does: the bus calls the handler at once.
  @Locked('order:{args.0.id}', 5000)
  async execute(command: CreateOrder): Promise<string> {
    this.events.publish(new OrderCreated(command.id));
    return 'created';
  }
}

@EventsHandler(OrderCreated)
class OrderCreatedHandler implements IEventHandler<OrderCreated> {
  @Locked('order:{args.0.id}', 5000)
  async handle(event: OrderCreated): Promise<void> {
    await doorFor(`cqrs:${event.id}`).pass();
  }
}

@Injectable()
class Payments {
  constructor(private readonly emitter: EventEmitter2) {}

  @Locked('pay:{args.0}', 5000)
  async pay(id: string): Promise<string> {
    this.emitter.emit('order.paid', { id });
    await doorFor(`pay:${id}`).isReached; // the caller goes on once its listener started
    return 'paid';
  }

  @OnEvent('order.paid', { async: true })
  @Locked('pay:{args.0.id}', 5000)
  async onPaid(event: { id: string }): Promise<void> {
    await doorFor(`pay:${event.id}`).pass();
  }

  /** What `later` gave: 'ran', or undefined when skipped. */
  laterResult: unknown = 'not yet';

  // Its keys stay 3 s after the run: a call it starts once it returned must not run under them.
  @Locked('stay:{args.0}', 5000, { lockAtLeastFor: 3000 })
  async brief(id: string): Promise<void> {
    setImmediate(() => void this.later(id).then((result) => (this.laterResult = result)));
  }

  @Locked('stay:{args.0}', 5000)
  async later(_id: string): Promise<string> {
    return 'ran';
  }

  @Locked('job:{args.0}', 5000)
  async step(id: string): Promise<string> {
    await doorFor(`job:${id}`).pass();
    return 'stepped';
  }
}

@Module({
  imports: [CqrsModule.forRoot(), EventEmitterModule.forRoot()],
  providers: [CreateOrderHandler, OrderCreatedHandler, Payments],
})
class OrdersModule {}

let fleet: RedisFleet;
let app: INestApplicationContext;

beforeAll(async () => {
  fleet = await startFleet(3);
  const moduleRef = await Test.createTestingModule({
    imports: [RedlockModule.forRoot({ nodes: fleet.urls, nodeTimeout: TEST_NODE_TIMEOUT }), OrdersModule],
  }).compile();
  app = await moduleRef.createNestApplication({ logger: false }).init();
});

afterAll(async () => {
  for (const door of doors.values()) door.openNow();
  await app?.close();
  await fleet?.stop();
});

/** The next `released` event of a lock on `resource`. */
const releasedOf = (resource: string) =>
  firstValueFrom(
    app.get(LockService).events$.pipe(
      ofLockEvent('released'),
      filter((event) => event.resources.includes(resource)),
    ),
  );

describe('a call started under a lock and not awaited keeps the lock until it settles', () => {
  it('@nestjs/cqrs: an event handler the command published runs alone; a second command meanwhile is skipped', async () => {
    const commands = app.get(CommandBus);
    const door = doorFor('cqrs:1');
    expect(await commands.execute(new CreateOrder('1'))).toBe('created');
    await door.isReached;
    // The first command returned; its event's handler runs under the command's lock.
    expect(await commands.execute(new CreateOrder('1'))).toBeUndefined(); // busy: skipped
    const released = releasedOf('order:1');
    door.openNow();
    await released;
    expect(door.most).toBe(1);
    doors.delete('cqrs:1');
    const again = commands.execute(new CreateOrder('1'));
    await doorFor('cqrs:1').isReached;
    doorFor('cqrs:1').openNow();
    expect(await again).toBe('created');
  });

  it('@nestjs/event-emitter: an async listener started by a locked call holds its resource after the call returned', async () => {
    const payments = app.get(Payments);
    const door = doorFor('pay:7');
    expect(await payments.pay('7')).toBe('paid');
    expect(door.inside).toBe(1);
    expect(await payments.pay('7')).toBeUndefined(); // busy: skipped, the listener still inside
    const released = releasedOf('pay:7');
    door.openNow();
    await released;
    expect(door.most).toBe(1);
  });

  it('LockService.using resolves once the calls it started settled and the lock is released', async () => {
    const payments = app.get(Payments);
    const locks = app.get(LockService);
    const door = doorFor('job:3');
    let resolved = false;
    const using = locks
      .using('job:3', 5000, async () => {
        void payments.step('3'); // started, not awaited
        await door.isReached;
        return 'done';
      })
      .then((value) => ((resolved = true), value));
    await door.isReached;
    expect(await payments.step('3')).toBeUndefined(); // from outside the chain: busy, skipped
    expect(resolved).toBe(false);
    door.openNow();
    expect(await using).toBe('done');
    expect(await locks.tryAcquire('job:3', 1000).then((lock) => lock?.release().then(() => true))).toBe(true);
  });

  // A call that starts as the holder lets go (its last nested call just settled, the release
  // under way) must not run under the lock being released: it takes its own.
  it.each([0, 1, 2, 3])('a call started just as the lock is let go (%i ticks after) runs under a lock that is held', async (ticks) => {
    const locks = app.get(LockService);
    const door = new Door();
    let outer: Lock | undefined;
    let held: boolean | undefined;
    let second: Promise<unknown> | undefined;
    await locks.using(`late:${ticks}`, 5000, async (lock) => {
      outer = lock;
      second = (async () => {
        await locks.using(`late:${ticks}`, 5000, async () => undefined); // nested, settles at once
        for (let i = 0; i < ticks; i++) await Promise.resolve();
        await locks.using(`late:${ticks}`, 5000, async (inner) => {
          await door.pass();
          held = inner.isHeld;
        });
      })();
    });
    await door.isReached;
    // The holder's using() returned and released; the late call holds the resource (its own lock).
    expect(await locks.tryAcquire(`late:${ticks}`, 1000)).toBeNull();
    door.openNow();
    await second;
    expect(held).toBe(true);
    expect(outer!.isHeld).toBe(false);
  });

  it("a call on resources spread over two of the chain's locks keeps both until it settles, the outer one too", async () => {
    const locks = app.get(LockService);
    const door = new Door();
    const nested: Promise<unknown>[] = [];
    // The inner holder does not wait for the nested call; the outer one returns once it runs.
    const outer = locks.using('spread:a', 5000, async () => {
      void locks.using('spread:b', 5000, async () => {
        nested.push(locks.using(['spread:a', 'spread:b'], 5000, () => door.pass()));
      });
      await door.isReached;
    });
    await door.isReached;
    // Let go of under the nested call, the outer lock would be released in moments.
    await Promise.race([outer, new Promise((resolve) => setTimeout(resolve, 500))]);
    const taken = await Promise.all(['spread:a', 'spread:b'].map((resource) => locks.tryAcquire(resource, 1000)));
    for (const lock of taken) await lock?.release();
    expect(taken).toEqual([null, null]);
    door.openNow();
    await Promise.all([outer, ...nested]);
    expect(door.most).toBe(1);
  });

  it('a call started after a lockAtLeastFor run returned does not run under the keys left to expire: it is busy', async () => {
    const payments = app.get(Payments);
    await payments.brief('1');
    await until(() => payments.laterResult !== 'not yet', 'the later call settled');
    expect(payments.laterResult).toBeUndefined(); // skipped: the resource stays locked until the 3 s are over
  });
});
