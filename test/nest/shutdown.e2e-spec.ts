import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { LockService, Locked, Redlock, RedlockModule, type RedlockEvent } from '../../lib/index.js';
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
