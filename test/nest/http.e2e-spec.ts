import 'reflect-metadata';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import {
  type CallHandler,
  Controller,
  Get,
  HttpException,
  type INestApplication,
  Injectable,
  type NestInterceptor,
  Param,
  Post,
  RequestTimeoutException,
  Sse,
  UseInterceptors,
} from '@nestjs/common';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { Redis } from 'ioredis';
import request from 'supertest';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Socket } from 'node:net';
import { catchError, defer, filter, firstValueFrom, map, Observable, of, race, throwError, timeout, TimeoutError, timer } from 'rxjs';
import { LockService, Locked, RedlockModule, ofLockEvent, type RedlockEvent } from '../../lib/index.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';
import { until } from '../support/until.js';
import { TEST_NODE_TIMEOUT } from '../support/timeouts.js';

const counters = new Map<string, number>();
let lostSeen: (() => void) | undefined;
/** Whether the handler's lock was released within `ms` (set by each app: its LockService's events). */
let releasedWithin: (resource: string, ms: number) => Promise<boolean> = () => Promise.resolve(false);

/** A handler's body, held at a gate the test opens. */
let gate = { entered: Promise.resolve(), enter: () => undefined as void, opened: Promise.resolve(), open: () => undefined as void };
function newGate(): typeof gate {
  let enter = () => undefined as void;
  let open = () => undefined as void;
  const entered = new Promise<void>((resolve) => (enter = resolve));
  const opened = new Promise<void>((resolve) => (open = resolve));
  return (gate = { entered, enter, opened, open });
}

/** A team's request timeout: it gives up on the handler's Observable (unsubscribes) and answers 408. */
@Injectable()
class TimeoutInterceptor implements NestInterceptor {
  intercept(_context: unknown, next: CallHandler) {
    return next.handle().pipe(
      timeout(1500),
      catchError((e: unknown) => throwError(() => (e instanceof TimeoutError ? new RequestTimeoutException() : e))),
    );
  }
}

@Injectable()
class Slow {
  constructor(readonly locks: LockService) {}
}

@Controller('c')
class CounterController {
  constructor(private readonly slow: Slow) {}

  @Post(':id/incr')
  @Locked('counter:{params.id}', 2000)
  async incr(@Param('id') id: string) {
    const read = counters.get(id) ?? 0;
    await sleep(20);
    counters.set(id, read + 1);
    return { value: read + 1 };
  }

  @Post('by-body')
  @Locked('sku:{body.sku}', 2000)
  async byBody() {
    return { ok: true };
  }

  // A team's own error format for a busy resource.
  @Post(':id/ship')
  @Locked('ship:{params.id}', 2000, {
    busy: { exception: ({ method, type, args }) => new HttpException({ code: 'ORDER_LOCKED', method, type, order: args[0] }, 423) },
  })
  async ship(@Param('id') id: string) {
    return { shipped: id };
  }

  @Get('long')
  @Locked('long', 300)
  async long() {
    // Three ttls of work: auto-extension must keep the lock.
    await sleep(900);
    return { validity: this.slow.locks.current()!.validity > 0 };
  }

  @Get('throws')
  @Locked('throws', 2000)
  async throws() {
    await sleep(10);
    throw new Error('boom');
  }

  @Get('gated/:id')
  @Locked('gated:{params.id}', 2000)
  async gated() {
    gate.enter();
    await gate.opened;
    return { ok: true };
  }

  @Get('timed/:id')
  @UseInterceptors(TimeoutInterceptor)
  @Locked('timed:{params.id}', 2000)
  async timed() {
    gate.enter();
    await gate.opened;
    return { ok: true };
  }

  @Sse('events')
  @Locked('events', 2000)
  events(): Observable<{ data: { n: number } }> {
    return of(1, 2).pipe(map((n) => ({ data: { n } })));
  }

  // A query builder's kind of result: a thenable whose work starts when it is awaited.
  @Get('thenable')
  @Locked('thenable', 2000)
  thenable(): PromiseLike<{ releasedMeanwhile: boolean }> {
    return {
      then: (resolve, reject) =>
        releasedWithin('thenable', 300)
          .then((releasedMeanwhile) => ({ releasedMeanwhile }))
          .then(resolve, reject),
    };
  }

  // An async handler's stream, set up first.
  @Sse('async-events')
  @Locked('async-events', 2000)
  async asyncEvents(): Promise<Observable<{ data: { releasedMeanwhile: boolean } }>> {
    await sleep(1);
    return defer(() => releasedWithin('async-events', 300)).pipe(map((releasedMeanwhile) => ({ data: { releasedMeanwhile } })));
  }

  @Get('watched')
  @Locked('watched', 1000)
  async watched() {
    const lock = this.slow.locks.current()!;
    await new Promise<void>((resolve) => {
      lock.signal.addEventListener('abort', () => resolve());
      lostSeen?.();
    });
    return { aborted: lock.signal.aborted };
  }
}

let fleet: RedisFleet;
let raw: Redis[];

beforeAll(async () => {
  fleet = await startFleet(3);
  raw = fleet.urls.map((u) => new Redis(u));
});

afterAll(async () => {
  raw?.forEach((r) => r.disconnect());
  await fleet?.stop();
});

// The same controller on each HTTP platform Nest ships.
describe.each(['express', 'fastify'] as const)('@Locked on an HTTP handler (%s)', (platform) => {
  let app: INestApplication;
  let locks: LockService;
  const events: RedlockEvent[] = [];

  beforeAll(async () => {
    counters.clear();
    const moduleRef = await Test.createTestingModule({
      imports: [RedlockModule.forRoot({ nodes: fleet.urls, nodeTimeout: TEST_NODE_TIMEOUT })],
      controllers: [CounterController],
      providers: [Slow],
    }).compile();
    if (platform === 'fastify') {
      app = moduleRef.createNestApplication<NestFastifyApplication>(new FastifyAdapter(), { logger: false });
      await app.init();
      await (app as NestFastifyApplication).getHttpAdapter().getInstance().ready();
    } else {
      app = moduleRef.createNestApplication({ logger: false });
      await app.init();
    }
    locks = app.get(LockService);
    locks.events$.subscribe((e) => events.push(e));
    releasedWithin = (resource, ms) =>
      firstValueFrom(
        race(
          locks.events$.pipe(
            ofLockEvent('released'),
            filter((e) => e.resources[0] === resource),
            map(() => true),
          ),
          timer(ms).pipe(map(() => false)),
        ),
      );
  });

  // A failed test must not leave a handler at its gate: app.close() waits for it.
  afterEach(() => gate.open());
  afterAll(async () => {
    await app?.close();
  });

  it('keeps a read-modify-write right under concurrent requests; the losers get 409', async () => {
    const responses = await Promise.all(Array.from({ length: 8 }, () => request(app.getHttpServer()).post('/c/a/incr')));
    const ok = responses.filter((r) => r.status === 201);
    const conflicts = responses.filter((r) => r.status === 409);
    expect(ok.length + conflicts.length).toBe(8);
    expect(ok.length).toBeGreaterThanOrEqual(1);
    expect(conflicts.length).toBeGreaterThanOrEqual(1);
    expect(counters.get('a')).toBe(ok.length);
    // Another key is a different resource.
    expect((await request(app.getHttpServer()).post('/c/b/incr')).status).toBe(201);
  });

  it('answers 400 when a key part is missing from the request', async () => {
    const missing = await request(app.getHttpServer()).post('/c/by-body').send({});
    expect(missing.status).toBe(400);
    expect(missing.body.message).toContain('{body.sku}');
    expect((await request(app.getHttpServer()).post('/c/by-body').send({ sku: 'A1' })).status).toBe(201);
  });

  it('answers a busy resource with the error of busy.exception, told the method, the transport and the arguments', async () => {
    const held = await locks.acquire('ship:7', 5000);
    const busy = await request(app.getHttpServer()).post('/c/7/ship');
    expect(busy.status).toBe(423);
    expect(busy.body).toEqual({ code: 'ORDER_LOCKED', method: 'CounterController.ship', type: 'http', order: '7' });
    await held.release();
    expect((await request(app.getHttpServer()).post('/c/7/ship')).body).toEqual({ shipped: '7' });
  });

  it('holds the lock for a handler running three times the ttl, then releases it', async () => {
    const long = request(app.getHttpServer())
      .get('/c/long')
      .then((r) => r);
    // Wait until the handler holds the lock (an event, not a sleep).
    await firstValueFrom(locks.events$.pipe(ofLockEvent('acquired')));
    const end = performance.now() + 800;
    while (performance.now() < end) {
      expect(await locks.tryAcquire('long', 300)).toBeNull();
      await sleep(50);
    }
    const response = await long;
    expect(response.body).toEqual({ validity: true });
    const after = await locks.tryAcquire('long', 300);
    expect(after).not.toBeNull();
    await after!.release();
  });

  it('releases the lock when the handler throws, and passes the error through', async () => {
    const response = await request(app.getHttpServer()).get('/c/throws');
    expect(response.status).toBe(500);
    const lock = await locks.tryAcquire('throws', 1000);
    expect(lock).not.toBeNull();
    await lock!.release();
  });

  /** Until `resource` is released, and then free. */
  async function releasedAfterwards(resource: string, released: Promise<unknown>) {
    await released;
    const lock = await locks.tryAcquire(resource, 1000);
    expect(lock).not.toBeNull();
    await lock!.release();
  }
  const releaseOf = (resource: string) =>
    firstValueFrom(
      locks.events$.pipe(
        ofLockEvent('released'),
        filter((e) => e.resources[0] === resource),
      ),
    );

  it('keeps the lock until an async handler ends, though a timeout interceptor gave up on it', async () => {
    newGate();
    const first = request(app.getHttpServer())
      .get('/c/timed/1')
      .then((r) => r);
    await gate.entered;
    // The interceptor unsubscribed and answered; the handler runs on, so the resource stays locked.
    expect((await first).status).toBe(408);
    expect((await request(app.getHttpServer()).get('/c/timed/1')).status).toBe(409);
    expect(await locks.tryAcquire('timed:1', 1000)).toBeNull();
    const released = releaseOf('timed:1');
    gate.open();
    await releasedAfterwards('timed:1', released);
  });

  it('keeps the lock until an async handler ends, though its client went away', async () => {
    newGate();
    const server = app.getHttpServer() as import('node:http').Server;
    // The server's side of the connection closed (the platform unsubscribes on it), then a turn of the loop.
    const closed = new Promise<void>((resolve) =>
      server.once('connection', (socket: Socket) => socket.once('close', () => setImmediate(resolve))),
    );
    const first = request(server).get('/c/gated/1');
    first.end(() => undefined);
    await gate.entered;
    first.abort();
    await closed;
    expect((await request(server).get('/c/gated/1')).status).toBe(409);
    const released = releaseOf('gated:1');
    gate.open();
    await releasedAfterwards('gated:1', released);
  });

  it('holds the lock while a thenable it returned (a query builder) runs, not only until it is returned', async () => {
    expect((await request(app.getHttpServer()).get('/c/thenable')).body).toEqual({ releasedMeanwhile: false });
  });

  it("holds the lock for the stream of an async handler's promise, as Nest streams it", async () => {
    expect((await request(app.getHttpServer()).get('/c/async-events')).text).toContain('data: {"releasedMeanwhile":false}');
  });

  it('answers a busy event stream with 200 and an error event, or 409 if busy was known before its headers went out', async () => {
    const free = await request(app.getHttpServer()).get('/c/events');
    expect(free.text).toContain('data: {"n":2}');
    const held = await locks.acquire('events', 5000);
    try {
      // Nest commits the headers on the next macrotask: which of that and the nodes' busy answer comes first is a race.
      const busy = await request(app.getHttpServer()).get('/c/events');
      expect([200, 409]).toContain(busy.status);
      if (busy.status === 200) expect(busy.text).toMatch(/event: error/);
      expect(busy.text).not.toContain('"n"');
    } finally {
      await held.release();
    }
  });

  it('aborts the handler signal and emits lost when a majority loses the keys', async () => {
    const inside = new Promise<void>((resolve) => (lostSeen = resolve));
    const pending = request(app.getHttpServer())
      .get('/c/watched')
      .then((r) => r);
    await inside;
    const lost = firstValueFrom(locks.lost$);
    // The acquire was decided at quorum: make sure no SET is still in flight before deleting.
    await until(
      async () => (await Promise.all(raw.map((r) => r.exists('redlock:lock:watched')))).every((n) => n === 1),
      'the keys on every node',
    );
    await Promise.all([0, 1].map((i) => raw[i]!.del('redlock:lock:watched')));
    const event = await lost;
    expect(event.resources).toEqual(['watched']);
    expect((await pending).body).toEqual({ aborted: true });
    expect(events.some((e) => e.type === 'lost')).toBe(true);
  });
});
