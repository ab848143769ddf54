import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { LockService, type RedlockEvent } from 'nest-redlock';
import { setTimeout as sleep } from 'node:timers/promises';
import request from 'supertest';
// The application's own node-redis (v4 here), which the library never imports (an optional peer dependency).
import { createClient } from 'redis';
import { AppModule } from '../src/app.module';
import { TICK_RESOURCE, TickJob } from '../src/tick.job';
import { startNode, type RedisNode } from './redis-spawner'; // copied in by scripts/consumers.mjs

async function until(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(25);
  }
}

describe('nest-redlock in a NestJS 11 CommonJS app (packed tarball)', () => {
  let redis: RedisNode | undefined;
  let app: INestApplication | undefined;
  let base = '';
  const events: RedlockEvent[] = [];

  beforeAll(async () => {
    redis = await startNode();
    app = await NestFactory.create(AppModule.forNodes([redis.url]), { logger: ['error', 'warn'] });
    // Subscribed before init, so the first cron tick's events are seen too.
    app.get(LockService).events$.subscribe((event) => events.push(event));
    await app.listen(0, '127.0.0.1');
    base = await app.getUrl();
  });

  afterAll(async () => {
    await app?.close();
    await redis?.stop();
  });

  it('loads the CommonJS build through the "require" condition', () => {
    const resolved = require.resolve('nest-redlock');
    expect(resolved).toMatch(/node_modules[\\/]nest-redlock[\\/]dist[\\/]cjs[\\/]index\.js$/);
    // The LockService the app got is the one from that file, not another copy.
    expect(require(resolved).LockService).toBe(LockService);
    // That file is in the module registry, and no ESM copy of the package next to it.
    const loaded = Object.keys(require.cache).filter((file) => /[\\/]nest-redlock[\\/]dist[\\/]/.test(file));
    expect(loaded).toContain(resolved);
    expect(loaded.filter((file) => /[\\/]dist[\\/]esm[\\/]/.test(file))).toEqual([]);
  });

  it('the locked endpoint lets one of several concurrent requests in and answers 409 to the rest', async () => {
    const concurrent = await Promise.all([
      ...Array.from({ length: 5 }, () => request(base).post('/items/42')),
      request(base).post('/items/7'), // another key: not blocked by item:42
    ]);
    const on42 = concurrent
      .slice(0, 5)
      .map((r) => r.status)
      .sort();
    expect(on42).toEqual([201, 409, 409, 409, 409]);
    expect(concurrent[5]!.status).toBe(201);
    expect(concurrent.find((r) => r.status === 201)!.body).toEqual({ id: '42', updated: true });

    // Released when the handler finished: the next request gets in.
    expect((await request(base).post('/items/42')).status).toBe(201);

    const on = (type: string) => events.filter((e) => e.type === type && 'resources' in e && e.resources.join() === 'item:42');
    expect(on('acquired')).toHaveLength(2);
    // The release may land just after the response went out.
    await until(() => on('released').length === 2, 3000, "two 'released' events for item:42");
  });

  it("a second instance on the application's own node-redis v4 client shares the lock and leaves the client open", async () => {
    const own = createClient({ url: redis!.url });
    own.on('error', () => undefined);
    await own.connect();
    const other = await NestFactory.create(AppModule.forNodes([own]), { logger: ['error', 'warn'] });
    await other.listen(0, '127.0.0.1');
    try {
      const otherBase = await other.getUrl();
      const answers = await Promise.all([request(base).post('/items/98'), request(otherBase).post('/items/98')]);
      expect(answers.map((r) => r.status).sort()).toEqual([201, 409]);
    } finally {
      await other.close();
    }
    expect(own.isReady).toBe(true); // the application's client is the application's to close
    await own.quit();
  });

  it("the semaphore endpoint lets two of six concurrent requests in, across two instances (one on the application's own node-redis v4)", async () => {
    const own = createClient({ url: redis!.url });
    own.on('error', () => undefined);
    await own.connect();
    const other = await NestFactory.create(AppModule.forNodes([own]), { logger: ['error', 'warn'] });
    await other.listen(0, '127.0.0.1');
    try {
      const otherBase = await other.getUrl();
      const answers = await Promise.all(
        [base, base, base, otherBase, otherBase, otherBase].map((url) => request(url).post('/items/acme/export')),
      );
      expect(answers.map((r) => r.status).sort()).toEqual([201, 201, 409, 409, 409, 409]);
      expect(answers.find((r) => r.status === 201)!.body).toEqual({ tenant: 'acme', exported: true });
      // The permits were given back when the handlers finished: two more get in.
      const again = await Promise.all([request(base).post('/items/acme/export'), request(otherBase).post('/items/acme/export')]);
      expect(again.map((r) => r.status)).toEqual([201, 201]);
    } finally {
      await other.close();
    }
    await own.quit();
  });

  it('the read-write endpoints: readers share the catalog, a rebuild is refused beside them, and readers beside it', async () => {
    const acquired = () => events.filter((e) => e.type === 'acquired' && e.resources.join() === 'catalog').length;
    const readers = Promise.all(
      [1, 2, 3].map(() =>
        request(base)
          .get('/items/catalog')
          .then((r) => r),
      ),
    );
    await until(() => acquired() === 3, 5000, 'three readers inside');
    expect((await request(base).put('/items/catalog')).status).toBe(409);
    expect((await readers).map((r) => r.status)).toEqual([200, 200, 200]);
    await until(
      () => events.filter((e) => e.type === 'released' && e.resources.join() === 'catalog').length === 3,
      3000,
      'the readers gone',
    );
    const rebuild = request(base)
      .put('/items/catalog')
      .then((r) => r);
    await until(() => acquired() === 4, 5000, 'the writer inside');
    expect((await request(base).get('/items/catalog')).status).toBe(409);
    expect((await rebuild).status).toBe(200);
  });

  it('the locked cron job runs under its lock', async () => {
    const job = app!.get(TickJob);
    const acquiredTick = () => events.some((e) => e.type === 'acquired' && e.resources.length === 1 && e.resources[0] === TICK_RESOURCE);
    await until(() => acquiredTick() && job.runs.length > 0, 5000, `an 'acquired' event for ${TICK_RESOURCE} and a run`);
    expect(job.runs[0]).toEqual([TICK_RESOURCE]);
    await until(
      () => events.some((e) => e.type === 'released' && e.resources[0] === TICK_RESOURCE),
      3000,
      `a 'released' event for ${TICK_RESOURCE}`,
    );
  });
});
