import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable, Module, type INestApplicationContext } from '@nestjs/common';
import { Cron, Interval, ScheduleModule } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import { setTimeout as sleep } from 'node:timers/promises';
import { firstValueFrom } from 'rxjs';
import { LockService, Locked, RedlockModule, ofLockEvent } from '../../lib/index.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';
import { until } from '../support/until.js';
import { TEST_NODE_TIMEOUT } from '../support/timeouts.js';

/** Every run of each job: [job, app, second of the tick]. */
const runs: [string, string, number][] = [];

@Injectable()
class LockedAboveCron {
  app = '';
  @Locked('tick:above', 5000, { lockAtLeastFor: 700 })
  @Cron('* * * * * *')
  async run() {
    runs.push(['above', this.app, Math.floor(Date.now() / 1000)]);
    await sleep(20);
  }
}

@Injectable()
class CronAboveLocked {
  app = '';
  @Cron('* * * * * *')
  @Locked('tick:below', 5000, { lockAtLeastFor: 700 })
  async run() {
    runs.push(['below', this.app, Math.floor(Date.now() / 1000)]);
    await sleep(20);
  }
}

@Injectable()
class Skipper {
  @Interval(50)
  @Locked('held-elsewhere', 5000)
  async run() {
    runs.push(['skipper', '', 0]);
  }
}

let fleet: RedisFleet;
const apps: INestApplicationContext[] = [];

async function startApp(name: string, providers: (new (...args: never[]) => unknown)[]): Promise<INestApplicationContext> {
  @Module({
    imports: [ScheduleModule.forRoot(), RedlockModule.forRoot({ nodes: fleet.urls, nodeTimeout: TEST_NODE_TIMEOUT })],
    providers: providers as never[],
  })
  class AppModule {}
  const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  for (const p of providers) {
    const instance = app.get(p as never) as { app?: string };
    if ('app' in instance) instance.app = name;
  }
  await app.init();
  apps.push(app);
  return app;
}

beforeAll(async () => {
  fleet = await startFleet(3);
});

afterAll(async () => {
  await Promise.all(apps.map((a) => a.close()));
  await fleet?.stop();
});

describe('@Locked on @nestjs/schedule methods', () => {
  it('three app instances run each cron tick once, with @Locked above or below @Cron', async () => {
    const started = await Promise.all(['a', 'b', 'c'].map((n) => startApp(n, [LockedAboveCron, CronAboveLocked])));
    const ticksOf = (job: string) => runs.filter((r) => r[0] === job).map((r) => r[2]);
    await until(() => ticksOf('above').length >= 3 && ticksOf('below').length >= 3, 'three ticks of each job', 6000);
    await Promise.all(started.map((a) => a.close()));
    apps.length = 0;
    for (const job of ['above', 'below']) {
      const ticks = ticksOf(job);
      expect(new Set(ticks).size).toBe(ticks.length); // never twice in one tick across the three apps
    }
  });

  it('skips a run whose resource is busy and emits skipped', async () => {
    const app = await startApp('s', [Skipper]);
    const locks = app.get(LockService);
    const held = await locks.acquire('held-elsewhere', 10_000);
    const skipped = await firstValueFrom(locks.events$.pipe(ofLockEvent('skipped')));
    expect(skipped.method).toBe('Skipper.run');
    expect(skipped.resources).toEqual(['held-elsewhere']);
    expect(runs.some((r) => r[0] === 'skipper')).toBe(false);
    await held.release();
  });
});
