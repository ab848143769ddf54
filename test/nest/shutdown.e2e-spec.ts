import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable, Module } from '@nestjs/common';
import { BullModule, Processor, WorkerHost } from '@nestjs/bullmq';
import { Test } from '@nestjs/testing';
import { Queue, type Job as QueueJob } from 'bullmq';
import { LockService, Locked, Redlock, RedlockModule, ofLockEvent, type LockSkippedEvent, type RedlockEvent } from '../../lib/index.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';
import { TEST_NODE_TIMEOUT } from '../support/timeouts.js';
import { until } from '../support/until.js';

/** A job that runs until the test lets it finish, several ttls long. */
@Injectable()
class Job {
  started = false;
  finish: () => void = () => undefined;
  abortedWhileRunning: boolean | undefined;

  constructor(private readonly locks: LockService) {}

  @Locked('nightly-import', 300)
  async run(): Promise<void> {
    const lock = this.locks.current()!;
    this.started = true;
    await new Promise<void>((resolve) => (this.finish = resolve));
    this.abortedWhileRunning = lock.signal.aborted;
  }
}

let fleet: RedisFleet;
let other: Redlock;

beforeAll(async () => {
  fleet = await startFleet(3);
  other = new Redlock({ nodes: fleet.urls, nodeTimeout: TEST_NODE_TIMEOUT, retryCount: 0 });
});

afterAll(async () => {
  await other?.close();
  await fleet?.stop();
});

describe('app.close() while a @Locked job runs (issue 18.2)', () => {
  it('keeps the job locked, and extended, until it finishes; then releases', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [RedlockModule.forRoot({ nodes: fleet.urls, nodeTimeout: TEST_NODE_TIMEOUT, logger: false })],
      providers: [Job],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    const events: RedlockEvent[] = [];
    app.get(LockService).events$.subscribe((e) => events.push(e));
    const job = app.get(Job);
    const running = job.run();
    await until(() => job.started, 'the job running under its lock');

    let closed = false;
    const closing = app.close().then(() => (closed = true));
    const extensions = () => events.filter((e) => e.type === 'extended').length;
    const before = extensions();
    // Several 300 ms ttls pass during shutdown: the lock is extended, and another instance is refused.
    await until(() => extensions() >= before + 3, 'three extensions during shutdown');
    await expect(other.acquire('nightly-import', 1000)).rejects.toMatchObject({ code: 'RESOURCE_BUSY' });
    expect(closed).toBe(false);

    job.finish();
    await running;
    await closing;
    expect(job.abortedWhileRunning).toBe(false);
    expect(events.some((e) => e.type === 'lost')).toBe(false);
    await (await other.acquire('nightly-import', 1000, { retryCount: 20, retryDelay: 20 })).release();
  });
});

/** The same job on a semaphore's permit and on a write lock: permits are kept through shutdown as locks are. */
@Injectable()
class PermitJobs {
  started = { limit: false, write: false };
  private finishers: (() => void)[] = [];
  aborted: boolean[] = [];

  constructor(private readonly locks: LockService) {}

  finish(): void {
    for (const finish of this.finishers) finish();
  }

  @Locked('stripe-batch', 300, { limit: 2 })
  async charge(): Promise<void> {
    await this.hold('limit');
  }

  @Locked('catalog-rebuild', 300, { mode: 'write' })
  async rebuild(): Promise<void> {
    await this.hold('write');
  }

  private async hold(kind: 'limit' | 'write'): Promise<void> {
    const permit = this.locks.current()!;
    this.started[kind] = true;
    await new Promise<void>((resolve) => this.finishers.push(resolve));
    this.aborted.push(permit.signal.aborted);
  }
}

describe('app.close() while @Locked jobs hold permits', () => {
  it("keeps a semaphore's permit and a write lock, extended, until the jobs finish; then gives them back", async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [RedlockModule.forRoot({ nodes: fleet.urls, nodeTimeout: TEST_NODE_TIMEOUT, logger: false })],
      providers: [PermitJobs],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    const events: RedlockEvent[] = [];
    app.get(LockService).events$.subscribe((e) => events.push(e));
    const jobs = app.get(PermitJobs);
    const running = Promise.all([jobs.charge(), jobs.rebuild()]);
    await until(() => jobs.started.limit && jobs.started.write, 'both jobs running under their permits');

    let closed = false;
    const closing = app.close().then(() => (closed = true));
    const extended = (resource: string) => events.filter((e) => e.type === 'extended' && e.resources.includes(resource)).length;
    const before = { limit: extended('stripe-batch'), write: extended('catalog-rebuild') };
    await until(
      () => extended('stripe-batch') >= before.limit + 3 && extended('catalog-rebuild') >= before.write + 3,
      'three extensions of each permit during shutdown',
    );
    // The job's permit still counts: one of the two is left, and a reader waits for the writer.
    const second = await other.acquire('stripe-batch', 1000, { limit: 2 });
    await expect(other.acquire('stripe-batch', 1000, { limit: 2 })).rejects.toMatchObject({ code: 'RESOURCE_BUSY' });
    await expect(other.acquire('catalog-rebuild', 1000, { mode: 'read' })).rejects.toMatchObject({ code: 'RESOURCE_BUSY' });
    await second.release();
    expect(closed).toBe(false);

    jobs.finish();
    await running;
    await closing;
    expect(jobs.aborted).toEqual([false, false]);
    expect(events.some((e) => e.type === 'lost')).toBe(false);
    const retry = { retryCount: 20, retryDelay: 20 };
    const both = await Promise.all([
      other.acquire('stripe-batch', 1000, { limit: 2, ...retry }),
      other.acquire('stripe-batch', 1000, { limit: 2, ...retry }),
      other.acquire('catalog-rebuild', 1000, { mode: 'write', ...retry }),
    ]);
    await Promise.all(both.map((permit) => permit.release()));
  });
});

/** Calls that come while the application closes, its lock client closed and a job still running. */
@Injectable()
class Ticker {
  ran = 0;

  @Locked('tick', 1000) // a provider method: skipped when it cannot be locked
  async tick(): Promise<void> {
    this.ran++;
  }
}

@Processor('imports')
class ImportsProcessor extends WorkerHost {
  ran: string[] = [];

  @Locked('import:{job.data.id}', 1000)
  async process(job: QueueJob<{ id: string }>): Promise<void> {
    this.ran.push(job.data.id);
  }
}

describe('calls that come while app.close() waits for running work', () => {
  it('a provider method is skipped (reason closed), a queue job is postponed, not failed', async () => {
    const queueNode = await startFleet(1, { args: ['--maxmemory-policy', 'noeviction'] });
    const connection = { host: '127.0.0.1', port: queueNode.ports[0]! };
    @Module({
      imports: [
        BullModule.forRoot({ connection }),
        BullModule.registerQueue({ name: 'imports' }),
        RedlockModule.forRoot({ nodes: fleet.urls, nodeTimeout: TEST_NODE_TIMEOUT, logger: false }),
      ],
      providers: [Job, Ticker, ImportsProcessor],
    })
    class ClosingApp {}
    const moduleRef = await Test.createTestingModule({ imports: [ClosingApp] }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    const queue = new Queue('imports', { connection }); // outlives the application, to read the job after
    const skipped: LockSkippedEvent[] = [];
    app
      .get(LockService)
      .events$.pipe(ofLockEvent('skipped'))
      .subscribe((e) => skipped.push(e));
    const job = app.get(Job);
    const running = job.run();
    let closing: Promise<void> | undefined;
    try {
      await until(() => job.started, 'the job running under its lock');
      closing = app.close();
      // The client closes first (RedlockModule's shutdown hook), then waits for the job.
      const client = app.get(Redlock);
      const closed = () =>
        client.acquire('probe', 1000, { retryCount: 0 }).then(
          (lock) => lock.release().then(() => false),
          (error: { code?: string }) => error.code === 'CLIENT_CLOSED',
        );
      await until(closed, 'the lock client closed (acquires refused with CLIENT_CLOSED)');

      await expect(app.get(Ticker).tick()).resolves.toBeUndefined();
      expect(app.get(Ticker).ran).toBe(0);
      expect(skipped).toEqual([expect.objectContaining({ method: 'Ticker.tick', reason: 'closed', resources: ['tick'] })]);

      // The worker still fetches jobs until its own shutdown hook, after this module's.
      const added = await queue.add('import', { id: 'a' }, { attempts: 1 });
      await until(async () => ((await queue.getJob(added.id!))?.delay ?? 0) > 0, 'the job moved back to delayed');
      const later = (await queue.getJob(added.id!))!;
      expect(await later.getState()).toBe('delayed');
      expect(later.attemptsMade).toBe(0);
      expect(app.get(ImportsProcessor).ran).toEqual([]);
    } finally {
      job.finish();
      await running;
      await closing;
      await queue.close();
      await queueNode.stop();
    }
  });
});
