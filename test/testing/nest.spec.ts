import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Controller, Injectable, Module, Param, Post, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Cron } from '@nestjs/schedule';
import { createMock } from '@golevelup/ts-jest';
import { mock, mockDeep } from 'jest-mock-extended';
import request from 'supertest';
import { setTimeout as sleep } from 'node:timers/promises';
import { setFlagsFromString } from 'node:v8';
import { until } from '../support/until.js';
import { runInNewContext } from 'node:vm';
import { firstValueFrom } from 'rxjs';
import { LockService, Locked, Redlock, RedlockModule, ofLockEvent, type RedlockEvent } from '../../lib/index.js';
import {
  MEMORY_REDIS_NODES,
  MemoryRedisNode,
  RedlockTestingModule,
  createMemoryNodes,
  createMemoryRedlock,
} from '../../lib/testing/index.js';

// No Redis anywhere in this file: the application runs on in-memory nodes.

const stock = new Map<string, number>();

@Injectable()
class Reports {
  runs = 0;

  @Locked('report:{args.0}', 2000)
  async build(name: string): Promise<string> {
    this.runs++;
    await sleep(50);
    return `report ${name}`;
  }
}

@Controller('orders')
class OrdersController {
  constructor(readonly locks: LockService) {}

  @Post(':id/reserve')
  @Locked('order:{params.id}', 2000)
  async reserve(@Param('id') id: string) {
    const read = stock.get(id) ?? 0;
    await sleep(30);
    stock.set(id, read + 1);
    return { reserved: read + 1, token: this.locks.current()?.fencingToken };
  }
}

describe('RedlockTestingModule', () => {
  let app: INestApplication;
  let locks: LockService;
  const events: RedlockEvent[] = [];

  beforeAll(async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [RedlockTestingModule.forRoot()],
      controllers: [OrdersController],
      providers: [Reports],
    }).compile();
    app = await moduleRef.createNestApplication({ logger: false }).init();
    locks = app.get(LockService);
    locks.events$.subscribe((e) => events.push(e));
  });
  afterAll(async () => {
    await app?.close();
  });

  it('runs a @Locked endpoint once at a time and answers 409 to the others', async () => {
    const responses = await Promise.all(Array.from({ length: 6 }, () => request(app.getHttpServer()).post('/orders/42/reserve')));
    const ok = responses.filter((r) => r.status === 201);
    const conflicts = responses.filter((r) => r.status === 409);
    expect(ok.length).toBeGreaterThanOrEqual(1);
    expect(conflicts.length).toBeGreaterThanOrEqual(1);
    expect(ok.length + conflicts.length).toBe(6);
    expect(stock.get('42')).toBe(ok.length);
    expect(conflicts[0]!.body).toMatchObject({ statusCode: 409, message: 'The resource is locked by another request' });
    expect(typeof ok[0]!.body.token).toBe('number');
    // Once the handler returned, the resource is free again.
    expect((await request(app.getHttpServer()).post('/orders/42/reserve')).status).toBe(201);
  });

  it('answers 409 while LockService holds the resource in a test', async () => {
    const held = await locks.acquire('order:7', 5000);
    expect((await request(app.getHttpServer()).post('/orders/7/reserve')).status).toBe(409);
    await held.release();
    expect((await request(app.getHttpServer()).post('/orders/7/reserve')).status).toBe(201);
  });

  it('skips a @Locked provider method while it runs elsewhere, with a skipped event', async () => {
    const reports = app.get(Reports);
    const skipped = firstValueFrom(locks.events$.pipe(ofLockEvent('skipped')));
    const [first, second] = await Promise.all([reports.build('daily'), reports.build('daily')]);
    expect([first, second].sort()).toEqual(['report daily', undefined].sort());
    expect(reports.runs).toBe(1);
    expect(await skipped).toMatchObject({ type: 'skipped', resources: ['report:daily'], method: 'Reports.build' });
    expect(await reports.build('daily')).toBe('report daily');
  });

  it('emits the same events$ as with Redis nodes', async () => {
    events.length = 0;
    await locks.using('evented', 1000, async () => undefined);
    expect(events.map((e) => e.type)).toEqual(['acquired', 'released']);
  });

  it('gives the test its in-memory nodes, to read keys or fail nodes', async () => {
    const nodes = app.get<MemoryRedisNode[]>(MEMORY_REDIS_NODES);
    expect(nodes).toHaveLength(3);
    expect(app.get(Redlock).nodeLabels).toEqual(nodes.map((n) => `memory:${n.options.port}/0`));
    const lock = await locks.acquire('visible', 5000);
    expect(await Promise.all(nodes.map((n) => n.exists('redlock:lock:visible')))).toEqual([1, 1, 1]);
    await lock.release();
    nodes[0]!.down();
    nodes[1]!.down();
    expect((await request(app.getHttpServer()).post('/orders/9/reserve')).status).toBe(503); // too few nodes: 503 (was 500 before issue 18 item 19)
    nodes[0]!.up();
    nodes[1]!.up();
    expect((await request(app.getHttpServer()).post('/orders/9/reserve')).status).toBe(201);
  });
});

describe('RedlockTestingModule options', () => {
  it('gives each application its own nodes, takes the module options, and can be global', async () => {
    @Injectable()
    class NeedsLocks {
      constructor(readonly locks: LockService) {}
    }
    @Module({ providers: [NeedsLocks], exports: [NeedsLocks] })
    class FeatureModule {}

    const build = async () => {
      const moduleRef = await Test.createTestingModule({
        imports: [RedlockTestingModule.forRoot({ isGlobal: true, nodes: 5, prefix: 'app:' }), FeatureModule],
      }).compile();
      return moduleRef.createNestApplication({ logger: false }).init();
    };
    const [one, two] = await Promise.all([build(), build()]);
    try {
      const nodesOne = one.get<MemoryRedisNode[]>(MEMORY_REDIS_NODES);
      const nodesTwo = two.get<MemoryRedisNode[]>(MEMORY_REDIS_NODES);
      expect(nodesOne).toHaveLength(5);
      expect(nodesOne[0]).not.toBe(nodesTwo[0]);
      const lock = await one.get(NeedsLocks).locks.acquire('shared-name', 5000);
      expect(await nodesOne[0]!.exists('app:lock:shared-name')).toBe(1);
      // Another application, other nodes: not busy there.
      const other = await two.get(NeedsLocks).locks.tryAcquire('shared-name', 5000);
      expect(other).not.toBeNull();
      await other!.release();
      await lock.release();
    } finally {
      await Promise.all([one.close(), two.close()]);
    }
  });

  it('shares nodes given by the test between applications, like two instances of one service', async () => {
    const nodes = createMemoryNodes(3);
    const build = async () => {
      const moduleRef = await Test.createTestingModule({
        imports: [RedlockTestingModule.forRoot({ nodes, controllerBusy: { status: 423 } })],
        controllers: [OrdersController],
      }).compile();
      return moduleRef.createNestApplication({ logger: false }).init();
    };
    const [one, two] = await Promise.all([build(), build()]);
    try {
      const held = await one.get(LockService).acquire('order:shared', 5000);
      expect((await request(two.getHttpServer()).post('/orders/shared/reserve')).status).toBe(423);
      await held.release();
      expect((await request(two.getHttpServer()).post('/orders/shared/reserve')).status).toBe(201);
    } finally {
      await Promise.all([one.close(), two.close()]);
    }
    expect(() => RedlockTestingModule.forRoot({ nodes: 0 })).toThrow(TypeError);
  });

  it('says to override Redlock when a test replaced LockService with a stand-in, as a rejection of the call', async () => {
    @Injectable()
    class Billing {
      @Locked('billing', 5000)
      async bill(): Promise<string> {
        return 'billed';
      }
    }
    @Module({ imports: [RedlockModule.forRoot({ nodes: ['redis://127.0.0.1:1'] })], providers: [Billing] })
    class AppModule {}

    const stub = { acquire: () => Promise.resolve({}) }; // a hand-made stand-in: no events$, nothing else
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] })
      .overrideProvider(LockService)
      .useValue(stub)
      .compile();
    const app = await moduleRef.init();
    try {
      let call: Promise<string> | undefined;
      expect(() => (call = app.get(Billing).bill())).not.toThrow();
      await expect(call).rejects.toThrow(/override the Redlock provider, not LockService/);
    } finally {
      await app.close();
    }
  });

  // What tests do: an auto-mock of LockService from the two common mock libraries. Every property
  // of such a mock answers (a deep one answers every call), so a call through it used to resolve to
  // the mock's answer with the method's body never run, or the application failed to start.
  for (const [name, make] of [
    ['@golevelup/ts-jest createMock', () => createMock<LockService>()],
    ['jest-mock-extended mock', () => mock<LockService>()],
    ['jest-mock-extended mockDeep', () => mockDeep<LockService>()],
  ] as const) {
    it(`starts with ${name}() in place of LockService, and a @Locked call (method or cron) rejects saying so`, async () => {
      @Injectable()
      class Billing {
        ran = 0;
        @Locked('billing:{args.0}', 5000)
        async bill(id: string): Promise<string> {
          this.ran++;
          return `billed ${id}`;
        }

        @Cron('0 0 * * *') // locked by the module's `schedule` option
        async nightly(): Promise<void> {
          this.ran++;
        }
      }
      const moduleRef = await Test.createTestingModule({
        imports: [RedlockTestingModule.forRoot({ schedule: true })],
        providers: [Billing],
      })
        .overrideProvider(LockService)
        .useValue(make())
        .compile();
      const app = await moduleRef.createNestApplication({ logger: false }).init();
      try {
        const billing = app.get(Billing);
        await expect(billing.bill('1')).rejects.toThrow(/override the Redlock provider, not LockService/);
        await expect(billing.nightly()).rejects.toThrow(/override the Redlock provider, not LockService/);
        expect(billing.ran).toBe(0);
      } finally {
        await app.close();
      }
    });
  }

  it('keeps nothing of a testing module compiled and never initialised, once the test lets go of it', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    let collected = false;
    const registry = new FinalizationRegistry(() => (collected = true));
    await (async () => {
      // A unit test's usual shape: compile(), get the provider, call it; no init, no close.
      const moduleRef = await Test.createTestingModule({ imports: [RedlockTestingModule.forRoot()], providers: [Reports] }).compile();
      expect(await moduleRef.get(Reports).build('unit')).toBe('report unit');
      registry.register(moduleRef.get(LockService), 'lock service');
    })();
    await until(() => (gc(), collected), 'the module collected');
  });

  it("replaces the client of an application's own RedlockModule: overrideProvider(Redlock)", async () => {
    @Module({
      imports: [RedlockModule.forRoot({ nodes: ['redis://127.0.0.1:1'] })], // never contacted
      controllers: [OrdersController],
    })
    class AppModule {}

    const moduleRef = await Test.createTestingModule({ imports: [AppModule] })
      .overrideProvider(Redlock)
      .useFactory({ factory: () => createMemoryRedlock() })
      .compile();
    const app = await moduleRef.createNestApplication({ logger: false }).init();
    try {
      const held = await app.get(LockService).acquire('order:override', 5000);
      expect((await request(app.getHttpServer()).post('/orders/override/reserve')).status).toBe(409);
      await held.release();
      expect((await request(app.getHttpServer()).post('/orders/override/reserve')).status).toBe(201);
    } finally {
      await app.close();
    }
  });
});
