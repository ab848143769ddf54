import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Controller, Get, Injectable, type INestApplication, type CallHandler, type ExecutionContext } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Redis } from 'ioredis';
import request from 'supertest';
import { AsyncResource } from 'node:async_hooks';
import { Observable, Subject, defer, filter, firstValueFrom, isObservable, map, timer } from 'rxjs';
import {
  LOCKED_METADATA,
  LockService,
  Locked,
  LockedInterceptor,
  ResourceBusyError,
  RedlockModule,
  type Lock,
  type RedlockEvent,
  type LockReleasedEvent,
} from '../../lib/index.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';
import { until } from '../support/until.js';
import { TEST_NODE_TIMEOUT } from '../support/timeouts.js';

@Injectable()
class Jobs {
  constructor(readonly locks: LockService) {}

  @Locked<[string, number]>(({ args }) => [`order:${args[0]}`, `stock:${args[1]}`], 2000)
  async multi(_order: string, _sku: number): Promise<readonly string[]> {
    return this.locks.current()!.resources;
  }

  @Locked('job:{args.0}', 2000)
  async outer(id: string): Promise<[string, string]> {
    const mine = this.locks.current()!.id;
    return [mine, await this.inner(id)];
  }

  @Locked('job:{args.0}', 2000)
  async inner(_id: string): Promise<string> {
    return this.locks.current()!.id;
  }

  @Locked('strict', 2000, { busy: { mode: 'throw' } })
  async strict(): Promise<string> {
    return 'ran';
  }

  @Locked('patient', 2000, { busy: { mode: 'wait', wait: 3000 } })
  async patient(): Promise<string> {
    return 'ran';
  }

  @Locked('short', 5000, { lockAtLeastFor: 400 })
  async short(): Promise<string> {
    return 'done';
  }

  readonly feedSource = new Subject<number>();

  @Locked('feed', 2000)
  feed(): Observable<number> {
    return this.feedSource.asObservable();
  }

  readonly laterSource = new Subject<number>();
  /** The lock `laterFeed`'s body ran under. */
  laterLock: Lock | undefined;

  @Locked('later-feed', 2000)
  laterFeed(): Observable<number> {
    this.laterLock = this.locks.current();
    return this.laterSource.asObservable();
  }

  @Locked('undeclared-feed', 2000)
  undeclared() {
    return new Subject<number>().asObservable() as unknown as Promise<number>;
  }

  @Locked('fragile', 2000)
  async fragile(pause: () => Promise<void>, fail: boolean): Promise<string> {
    await pause();
    if (fail) throw new Error('own error');
    return 'own result';
  }
}

@Controller('o')
class OptionsController {
  @Get('locked-423')
  @Locked('c423', 2000, { busy: { status: 423 } })
  async locked() {
    return { ok: true };
  }

  @Get('wait')
  @Locked('cwait', 2000, { busy: { mode: 'wait', wait: 3000 } })
  async waited() {
    return { ok: true };
  }

  @Get('stream')
  @Locked('stream', 2000)
  stream(): Observable<{ n: number }> {
    return timer(300).pipe(map(() => ({ n: 1 })));
  }

  @Locked('stream', 2000)
  endless(): Observable<number> {
    return new Subject<number>().asObservable();
  }
}

let fleet: RedisFleet;
let app: INestApplication;
let locks: LockService;
let jobs: Jobs;
let raw: Redis[];

beforeAll(async () => {
  fleet = await startFleet(3);
  raw = fleet.urls.map((u) => new Redis(u));
  const moduleRef = await Test.createTestingModule({
    imports: [RedlockModule.forRoot({ nodes: fleet.urls, nodeTimeout: TEST_NODE_TIMEOUT })],
    controllers: [OptionsController],
    providers: [Jobs],
  }).compile();
  app = moduleRef.createNestApplication({ logger: false });
  await app.init();
  locks = app.get(LockService);
  jobs = app.get(Jobs);
});

afterAll(async () => {
  await app?.close();
  raw?.forEach((r) => r.disconnect());
  await fleet?.stop();
});

describe('@Locked keys and nesting', () => {
  it('builds several resources from a typed key function', async () => {
    expect(await jobs.multi('42', 7)).toEqual(['order:42', 'stock:7']);
  });

  it('does not deadlock on a nested call for the same resource', async () => {
    const [outer, inner] = await jobs.outer('x');
    expect(inner).toBe(outer);
  });

  it('passes a nested using the lock that holds its resource, not merely the innermost', async () => {
    const seen = await locks.using('res-a', 2000, (a) =>
      locks.using('res-b', 2000, () => locks.using('res-a', 2000, (inner) => [a.id, inner.id, inner.resources])),
    );
    expect(seen[1]).toBe(seen[0]);
    expect(seen[2]).toEqual(['res-a']);
  });
});

describe('busy behaviour on provider methods', () => {
  it('throws ResourceBusyError in throw mode', async () => {
    const held = await locks.acquire('strict', 5000);
    await expect(jobs.strict()).rejects.toBeInstanceOf(ResourceBusyError);
    await held.release();
    expect(await jobs.strict()).toBe('ran');
  });

  it('waits for the holder in wait mode', async () => {
    const held = await locks.acquire('patient', 5000);
    const running = jobs.patient();
    setTimeout(() => void held.release(), 200);
    expect(await running).toBe('ran');
  });

  it('keeps the lock for lockAtLeastFor after a short run', async () => {
    const started = Date.now();
    const released = firstValueFrom(locks.events$.pipe(filter((e) => e.type === 'released' && e.resources[0] === 'short')));
    expect(await jobs.short()).toBe('done');
    await released; // left to expire, and reported as released by its holder
    expect(await locks.tryAcquire('short', 1000)).toBeNull();
    await until(async () => {
      const lock = await locks.tryAcquire('short', 1000);
      await lock?.release();
      return lock !== null;
    }, 'the lock to run out');
    expect(Date.now() - started).toBeGreaterThanOrEqual(380);
  });

  it('passes the method result and error through when the release fails', async () => {
    const pauseTwo = async () => {
      await fleet.pause(1);
      await fleet.pause(2);
    };
    const released = firstValueFrom(
      locks.events$.pipe(filter((e): e is LockReleasedEvent => e.type === 'released' && e.resources[0] === 'fragile')),
    );
    try {
      expect(await jobs.fragile(pauseTwo, false)).toBe('own result');
      expect((await released).confirmed).toBe(1); // the release did fail on the paused majority
    } finally {
      await fleet.resume(1);
      await fleet.resume(2);
    }
    // The resumed nodes answer their backlog before the client sends them anything new.
    await until(async () => (await locks.client.ping()).every((n) => n.status === 'up'), 'the nodes back');
    try {
      await expect(jobs.fragile(pauseTwo, true)).rejects.toThrow('own error');
    } finally {
      await fleet.resume(1);
      await fleet.resume(2);
    }
  });
});

describe('busy behaviour on HTTP handlers', () => {
  it('answers the configured status', async () => {
    const held = await locks.acquire('c423', 5000);
    expect((await request(app.getHttpServer()).get('/o/locked-423')).status).toBe(423);
    await held.release();
    expect((await request(app.getHttpServer()).get('/o/locked-423')).status).toBe(200);
  });

  it('waits up to the configured time before answering', async () => {
    const held = await locks.acquire('cwait', 5000);
    setTimeout(() => void held.release(), 200);
    expect((await request(app.getHttpServer()).get('/o/wait')).status).toBe(200);
  });
});

describe('Observable handlers', () => {
  it('hold the lock until the stream completes', async () => {
    const pending = request(app.getHttpServer())
      .get('/o/stream')
      .then((r) => r);
    await firstValueFrom(locks.events$.pipe(filter((e) => e.type === 'acquired' && e.resources[0] === 'stream')));
    expect(await locks.tryAcquire('stream', 1000)).toBeNull();
    expect((await pending).body).toEqual({ n: 1 });
    await until(async () => {
      const lock = await locks.tryAcquire('stream', 1000);
      await lock?.release();
      return lock !== null;
    }, 'the release after completion');
  });

  it('release the lock when the subscriber unsubscribes', async () => {
    // An RPC call as Nest makes it: the interceptor, then the handler bound to the interceptor's async context.
    const interceptor = new LockedInterceptor();
    const controller = app.get(OptionsController);
    const handler = OptionsController.prototype.endless;
    expect(Reflect.getMetadata(LOCKED_METADATA, handler)).toBeDefined();
    const context = {
      getHandler: () => handler,
      getArgs: () => [],
      getType: () => 'rpc',
      switchToRpc: () => ({ getData: () => ({}) }),
    } as unknown as ExecutionContext;
    const next: CallHandler = {
      handle: () => {
        const scope = new AsyncResource('handler');
        return defer(() => scope.runInAsyncScope(() => controller.endless()));
      },
    };
    const acquired = firstValueFrom(locks.events$.pipe(filter((e) => e.type === 'acquired' && e.resources[0] === 'stream')));
    const subscription = interceptor.intercept(context, next).subscribe();
    await acquired;
    expect(await locks.tryAcquire('stream', 1000)).toBeNull();
    subscription.unsubscribe();
    await until(async () => {
      const lock: Lock | null = await locks.tryAcquire('stream', 1000);
      await lock?.release();
      return lock !== null;
    }, 'the release after unsubscribe');
  });
});

describe('Observable provider methods', () => {
  it('return an Observable that holds the lock from subscription until the stream completes', async () => {
    const feed = jobs.feed();
    expect(isObservable(feed)).toBe(true);
    const free = await locks.tryAcquire('feed', 1000); // nothing is taken before a subscription
    expect(free).not.toBeNull();
    await free!.release();
    const acquired = firstValueFrom(locks.events$.pipe(filter((e) => e.type === 'acquired' && e.resources[0] === 'feed')));
    const values: number[] = [];
    const done = new Promise<void>((resolve) => feed.subscribe({ next: (v) => values.push(v), complete: resolve }));
    await acquired;
    expect(await locks.tryAcquire('feed', 1000)).toBeNull();
    jobs.feedSource.next(1);
    expect(await locks.tryAcquire('feed', 1000)).toBeNull();
    const released = firstValueFrom(locks.events$.pipe(filter((e) => e.type === 'released' && e.resources[0] === 'feed')));
    jobs.feedSource.complete();
    await done;
    await released;
    expect(values).toEqual([1]);
    const after = await locks.tryAcquire('feed', 1000);
    expect(after).not.toBeNull();
    await after!.release();
  });

  it('made under a lock on their resource and subscribed once it was released, take a lock of their own', async () => {
    let feed!: Observable<number>;
    await locks.using('later-feed', 2000, async () => {
      feed = jobs.laterFeed();
    });
    const acquired: RedlockEvent[] = [];
    const watching = locks.events$
      .pipe(filter((e) => e.type === 'acquired' && e.resources[0] === 'later-feed'))
      .subscribe((e) => acquired.push(e));
    try {
      const values: number[] = [];
      const done = new Promise<void>((resolve) => feed.subscribe({ next: (v) => values.push(v), complete: resolve }));
      await until(() => acquired.length === 1, 'a lock taken on subscription');
      expect(jobs.laterLock?.isHeld).toBe(true);
      expect(await locks.tryAcquire('later-feed', 1000)).toBeNull();
      jobs.laterSource.next(1);
      jobs.laterSource.complete();
      await done;
      expect(values).toEqual([1]);
    } finally {
      watching.unsubscribe();
    }
  });

  it('that are not declared to return one are refused with a TypeError, and their lock is released', async () => {
    const released = firstValueFrom(locks.events$.pipe(filter((e) => e.type === 'released' && e.resources[0] === 'undeclared-feed')));
    await expect(jobs.undeclared()).rejects.toThrow('declare its return type');
    await released;
  });
});
