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

  // Nested calls on a resource the call chain holds (see 'nested in a lock of another kind').
  readonly nested = { runs: 0, current: undefined as unknown };

  @Locked('nested:catalog', 2000, { mode: 'read' })
  async readThenWrite(): Promise<void> {
    await this.writeNested();
  }

  @Locked('nested:catalog', 2000, { mode: 'write' })
  async writeNested(): Promise<void> {
    this.nested.runs++;
  }

  @Locked('nested:catalog', 2000, { mode: 'write' })
  async writeThenRead(locks: LockService): Promise<void> {
    const outer = locks.current();
    await this.readNested(locks);
    expect(this.nested.current).toBe(outer);
  }

  @Locked('nested:catalog', 2000, { mode: 'read' })
  async readNested(locks: LockService): Promise<void> {
    this.nested.current = locks.current();
    this.nested.runs++;
  }

  @Locked('nested:pool', 2000, { limit: 2 })
  async permitThenMutex(): Promise<void> {
    await this.mutexNested();
  }

  @Locked('nested:pool', 2000)
  async mutexNested(): Promise<void> {
    this.nested.runs++;
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
    // A permit is of one resource: a key that names two is refused here, not on every call.
    expect(() => Locked(['a', 'b'], 1000, { limit: 2 })).toThrow('Expected `@Locked key` to be a single resource with `limit` or `mode`');
    expect(() => Locked(['a:{args.0}', 'b'], 1000, { mode: 'read' })).toThrow(InvalidArgumentError);
    expect(() => Locked(['a'], 1000, { mode: 'read' })).not.toThrow();
  });
});

describe('nested in a lock of another kind', () => {
  // The chain's lock is reused only where it gives what the nested call asks: a
  // read lock held is no write lock (no writer alone), a semaphore's permit no mutex.
  it('refuses a @Locked write inside a read lock of the same resource, typed, without running it', async () => {
    provider.nested.runs = 0;
    await expect(provider.readThenWrite()).rejects.toMatchObject({ code: 'LOCK_KIND_MISMATCH' });
    expect(provider.nested.runs).toBe(0);
    // The read lock was released on the way out: a writer gets in at once.
    await locks.using('nested:catalog', 2000, () => undefined, { mode: 'write', retryCount: 0 });
  });

  it('refuses a @Locked mutex inside a semaphore permit of the same resource', async () => {
    provider.nested.runs = 0;
    await expect(provider.permitThenMutex()).rejects.toMatchObject({ code: 'LOCK_KIND_MISMATCH' });
    expect(provider.nested.runs).toBe(0);
  });

  it('runs a read inside a write lock under the write lock (the writer is alone already)', async () => {
    provider.nested.runs = 0;
    await provider.writeThenRead(locks);
    expect(provider.nested.runs).toBe(1);
  });

  it('LockService.using: refuses a write inside a read, another limit inside a permit; reuses the same kind', async () => {
    await expect(
      locks.using('nested:using', 2000, () => locks.using('nested:using', 2000, () => 'ran', { mode: 'write' }), { mode: 'read' }),
    ).rejects.toMatchObject({ code: 'LOCK_KIND_MISMATCH' });
    await expect(
      locks.using('nested:using-pool', 2000, () => locks.using('nested:using-pool', 2000, () => 'ran', { limit: 1 }), { limit: 5 }),
    ).rejects.toMatchObject({ code: 'LOCK_KIND_MISMATCH' });
    const [outer, inner] = await locks.using(
      'nested:using-pool',
      2000,
      (lock) => locks.using('nested:using-pool', 2000, (nested) => [lock, nested], { limit: 5 }),
      { limit: 5 },
    );
    expect(inner).toBe(outer);
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
