import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Controller, Get, Injectable, Param, Scope, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { InvalidArgumentError, LockService, Locked, RedlockModule, type RedlockEvent } from '../../lib/index.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';
import { TEST_NODE_TIMEOUT } from '../support/timeouts.js';
import { until } from '../support/until.js';

/** A provider made anew for every request: its instances appear after the module started. */
@Injectable({ scope: Scope.REQUEST })
class PerRequest {
  @Locked('scoped:{args.0}', 5000)
  async run(id: string): Promise<string> {
    return `ran ${id}`;
  }
}

@Controller('scoped')
class ScopedController {
  constructor(private readonly work: PerRequest) {}

  @Get(':id')
  async get(@Param('id') id: string) {
    return { result: await this.work.run(id) };
  }
}

/** The gate a busy test holds its handler at: opened by the test. */
let open: () => void = () => undefined;

@Controller('locked')
class LockedController {
  @Get('held')
  @Locked('held-423', 5000, { busy: { mode: 'throw', status: 423 } })
  async held() {
    await new Promise<void>((resolve) => (open = resolve));
    return { ok: true };
  }
}

let fleet: RedisFleet;
let app: INestApplication;
const events: RedlockEvent[] = [];

beforeAll(async () => {
  fleet = await startFleet(3);
  const moduleRef = await Test.createTestingModule({
    imports: [RedlockModule.forRoot({ nodes: fleet.urls, nodeTimeout: TEST_NODE_TIMEOUT, logger: false })],
    controllers: [ScopedController, LockedController],
    providers: [PerRequest],
  }).compile();
  app = moduleRef.createNestApplication({ logger: false });
  await app.init();
  app.get(LockService).events$.subscribe((e) => events.push(e));
});

afterAll(async () => {
  await app?.close();
  await fleet?.stop();
});

describe('@Locked on a request-scoped provider (issue 14.7)', () => {
  it('locks its method on every request, though its instances are made after bootstrap', async () => {
    const response = await request(app.getHttpServer()).get('/scoped/7');
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ result: 'ran 7' });
    expect(events.filter((e) => e.type === 'acquired').map((e) => (e as { resources: readonly string[] }).resources)).toContainEqual([
      'scoped:7',
    ]);
  });
});

describe('busy settings (issue 14.8)', () => {
  it('are checked where @Locked is applied, not on the first busy call', () => {
    expect(() => Locked('k', 1000, { busy: { mode: 'wiat' as never } })).toThrow(InvalidArgumentError);
    expect(() => Locked('k', 1000, { busy: { status: 200 } })).toThrow(/status/);
    // Misspelt names and a null options object: typed, naming the option, not ignored or a TypeError.
    expect(() => Locked('k', 1000, { busy: { mdoe: 'wait' } as never })).toThrow(
      'Expected `@Locked busy.mdoe` to be one of the known options',
    );
    expect(() => Locked('k', 1000, { limt: 2 } as never)).toThrow('Expected `@Locked options.limt` to be one of the known options');
    expect(() => Locked('k', 1000, null as never)).toThrow(InvalidArgumentError);
  });

  it('answer a busy handler with the status configured and its own reason phrase, not always "Conflict"', async () => {
    const server = app.getHttpServer();
    const first = request(server)
      .get('/locked/held')
      .then((r) => r);
    await until(
      () => events.some((e) => e.type === 'acquired' && (e as { resources: readonly string[] }).resources[0] === 'held-423'),
      'the first request holding the lock',
    );
    const busy = await request(server).get('/locked/held');
    open();
    expect((await first).status).toBe(200);
    expect(busy.status).toBe(423);
    expect(busy.body).toMatchObject({ statusCode: 423, error: 'Locked' });
  });
});
