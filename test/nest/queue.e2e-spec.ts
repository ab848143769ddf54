import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Module, type INestApplicationContext } from '@nestjs/common';
import { BullModule, Processor, WorkerHost, getQueueToken } from '@nestjs/bullmq';
import { Test } from '@nestjs/testing';
import type { Job, Queue } from 'bullmq';
import { LockService, Locked, RedlockModule, ofLockEvent, type LockSkippedEvent } from '../../lib/index.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';
import { until } from '../support/until.js';
import { TEST_NODE_TIMEOUT } from '../support/timeouts.js';

/** Every run of a processor: [processor, job id]. */
const runs: [string, string][] = [];

@Processor('orders')
class OrdersProcessor extends WorkerHost {
  @Locked('order:{job.data.orderId}', 5000)
  async process(job: Job<{ orderId: string }>) {
    runs.push(['orders', job.id!]);
    return `paid ${job.data.orderId}`;
  }
}

@Processor('reports')
class ReportsProcessor extends WorkerHost {
  // Fail the attempt instead: the job's own attempts and backoff retry it.
  @Locked('report:{job.name}', 5000, { busy: { mode: 'throw' } })
  async process(job: Job) {
    runs.push(['reports', job.id!]);
    return 'built';
  }
}

let locksFleet: RedisFleet;
let queueNode: RedisFleet;
let app: INestApplicationContext;
let locks: LockService;
const skipped: LockSkippedEvent[] = [];

beforeAll(async () => {
  [locksFleet, queueNode] = await Promise.all([startFleet(3), startFleet(1, { args: ['--maxmemory-policy', 'noeviction'] })]);
  @Module({
    imports: [
      BullModule.forRoot({ connection: { host: '127.0.0.1', port: queueNode.ports[0]! } }),
      BullModule.registerQueue({ name: 'orders' }, { name: 'reports' }),
      RedlockModule.forRoot({ nodes: locksFleet.urls, nodeTimeout: TEST_NODE_TIMEOUT, jobBusy: { delay: 200 } }),
    ],
    providers: [OrdersProcessor, ReportsProcessor],
  })
  class QueueApp {}
  const moduleRef = await Test.createTestingModule({ imports: [QueueApp] }).compile();
  app = moduleRef.createNestApplication({ logger: false });
  await app.init();
  locks = app.get(LockService);
  locks.events$.pipe(ofLockEvent('skipped')).subscribe((event) => skipped.push(event));
});

afterAll(async () => {
  await app?.close();
  await Promise.all([locksFleet?.stop(), queueNode?.stop()]);
});

const queue = (name: string) => app.get<Queue>(getQueueToken(name));
const stateOf = async (name: string, id: string) => (await queue(name).getJob(id))!.getState();

describe('@Locked on a @nestjs/bullmq WorkerHost', () => {
  it('moves a job whose key is busy back to delayed, with a doubling delay, and runs it once the key is free', async () => {
    const held = await locks.acquire('order:42', 10_000);
    const job = await queue('orders').add('pay', { orderId: '42' });
    const busyRuns = () => skipped.filter((e) => e.method === 'OrdersProcessor.process').length;
    await until(() => busyRuns() >= 2, 'two busy runs of the job');
    // Not completed (a skipped run completed it before): delayed, by 200 ms, then twice that, no attempt spent.
    let delayed: Job | undefined;
    await until(async () => {
      delayed = await queue('orders').getJob(job.id!);
      return (await delayed!.getState()) === 'delayed' && delayed!.delay >= 400;
    }, 'the job back in the delayed set, by 400 ms or more');
    expect(delayed!.attemptsMade).toBe(0);
    expect(runs.filter(([p]) => p === 'orders')).toEqual([]);
    expect(skipped.find((e) => e.method === 'OrdersProcessor.process')!.resources).toEqual(['order:42']);

    await held.release();
    await until(async () => (await stateOf('orders', job.id!)) === 'completed', 'the job completed after the release');
    const done = (await queue('orders').getJob(job.id!))!;
    expect(done.returnvalue).toBe('paid 42');
    expect(runs.filter(([p]) => p === 'orders')).toEqual([['orders', job.id]]);
  });

  it("with busy mode 'throw', fails the attempt with RESOURCE_BUSY so that the job's attempts and backoff retry it", async () => {
    const held = await locks.acquire('report:monthly', 10_000);
    const job = await queue('reports').add('monthly', {}, { attempts: 3, backoff: { type: 'fixed', delay: 100 } });
    await until(async () => (await queue('reports').getJob(job.id!))!.attemptsMade >= 1, 'a failed attempt');
    const failed = (await queue('reports').getJob(job.id!))!;
    expect(failed.failedReason).toMatch(/is held by another holder/);
    await held.release();
    await until(async () => (await stateOf('reports', job.id!)) === 'completed', 'the job completed on a later attempt');
    expect(runs.filter(([p]) => p === 'reports')).toEqual([['reports', job.id]]);
  });
});
