import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { setTimeout as sleep } from 'node:timers/promises';
import { InvalidArgumentError, LockService, Locked, RedlockModule } from '../../lib/index.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';
import { TEST_NODE_TIMEOUT } from '../support/timeouts.js';

/** Counts the calls inside at once, per resource. */
class Gauge {
  inside = 0;
  most = 0;
  async run(ms: number): Promise<void> {
    this.most = Math.max(this.most, ++this.inside);
    await sleep(ms);
    this.inside--;
  }
}

@Injectable()
class Provider {
  readonly stripe = new Gauge();
  readonly catalog = { readers: new Gauge(), writers: new Gauge(), overlap: false };

  @Locked('provider:stripe', 2000, { limit: 2, busy: { mode: 'wait', wait: 10_000 } })
  async charge(): Promise<void> {
    await this.stripe.run(30);
  }

  @Locked('catalog', 2000, { mode: 'read', busy: { mode: 'wait', wait: 10_000 } })
  async read(): Promise<void> {
    if (this.catalog.writers.inside > 0) this.catalog.overlap = true;
    await this.catalog.readers.run(20);
  }

  @Locked('catalog', 2000, { mode: 'write', busy: { mode: 'wait', wait: 10_000 } })
  async write(): Promise<void> {
    if (this.catalog.readers.inside > 0 || this.catalog.writers.inside > 0) this.catalog.overlap = true;
    await this.catalog.writers.run(20);
  }
}

let fleet: RedisFleet;
let app: INestApplication;
let locks: LockService;
let provider: Provider;

beforeAll(async () => {
  fleet = await startFleet(3);
  const moduleRef = await Test.createTestingModule({
    imports: [RedlockModule.forRoot({ nodes: fleet.urls, nodeTimeout: TEST_NODE_TIMEOUT, retryDelay: 20, retryJitter: 20 })],
    providers: [Provider],
  }).compile();
  app = moduleRef.createNestApplication({ logger: false });
  await app.init();
  locks = app.get(LockService);
  provider = app.get(Provider);
});

afterAll(async () => {
  await app?.close();
  await fleet?.stop();
});

describe('@Locked with a limit or a mode', () => {
  it('runs at most `limit` calls of a semaphore-locked method at once, and every call', async () => {
    await Promise.all(Array.from({ length: 8 }, () => provider.charge()));
    expect(provider.stripe.most).toBe(2);
    expect(provider.stripe.inside).toBe(0);
  });

  it('runs readers together and each writer alone', async () => {
    const calls = Array.from({ length: 12 }, (_, i) => (i % 4 === 3 ? provider.write() : provider.read()));
    await Promise.all(calls);
    expect(provider.catalog.overlap).toBe(false);
    expect(provider.catalog.readers.most).toBeGreaterThanOrEqual(2);
    expect(provider.catalog.writers.most).toBe(1);
  });

  it('checks limit and mode when the decorator is applied', () => {
    expect(() => Locked('bad', 1000, { limit: 0 })).toThrow(InvalidArgumentError);
    expect(() => Locked('bad', 1000, { limit: 2, mode: 'read' })).toThrow(InvalidArgumentError);
    expect(() => Locked('bad', 1000, { mode: 'shared' as 'read' })).toThrow(InvalidArgumentError);
  });
});

describe('LockService with a limit', () => {
  it('tryAcquire answers null once the permits are taken; using gives its permit back', async () => {
    const first = await locks.tryAcquire('imports:tenant-1', 5000, { limit: 2 });
    const second = await locks.tryAcquire('imports:tenant-1', 5000, { limit: 2 });
    expect(first).not.toBeNull();
    expect(second).not.toBeNull();
    expect(await locks.tryAcquire('imports:tenant-1', 5000, { limit: 2 })).toBeNull();
    await first!.release();
    const token = await locks.using('imports:tenant-1', 5000, (lock) => lock.fencingToken, { limit: 2 });
    expect(token).toBeGreaterThan(second!.fencingToken!);
    // A mutex on a resource in use as a semaphore is refused, not taken beside it.
    await expect(locks.tryAcquire('imports:tenant-1', 5000)).rejects.toMatchObject({ code: 'LOCK_KIND_MISMATCH' });
    await second!.release();
  });
});
