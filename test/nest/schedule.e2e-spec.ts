import 'reflect-metadata';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable, Module, type INestApplicationContext } from '@nestjs/common';
import { Cron, Interval, ScheduleModule, Timeout } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import { setTimeout as sleep } from 'node:timers/promises';
import { firstValueFrom } from 'rxjs';
import { Redlock, LockService, Locked, RedlockModule, Unlocked, ofLockEvent, type RedlockModuleOptions } from '../../lib/index.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';
import { until } from '../support/until.js';
import { TEST_NODE_TIMEOUT } from '../support/timeouts.js';

/** Every run: [job, app, the resource it ran under (or '' without a lock)]. */
const runs: [string, string, string][] = [];

@Injectable()
class Jobs {
  app = '';
  constructor(private readonly locks: LockService) {}
  private record(job: string) {
    runs.push([job, this.app, this.locks.current()?.resources[0] ?? '']);
  }
  @Cron('* * * * * *') async everySecond() {
    this.record('cron');
  }
  @Interval(50) async every50ms() {
    this.record('interval');
  }
  @Timeout(50) async once() {
    this.record('timeout');
  }
  @Unlocked() @Interval(50) async everywhere() {
    this.record('unlocked');
  }
  @Interval(50) @Locked('own-key', 5000) async own() {
    this.record('own');
  }
}

@Injectable()
class TickJobs {
  app = '';
  constructor(private readonly locks: LockService) {}
  @Cron('* * * * * *') async run() {
    runs.push(['tick', this.app, this.locks.current()!.resources[0]!]);
    await sleep(20);
  }
  @Cron('* * * * * *') @Locked('explicit:{tick}', 5000) async explicit() {
    runs.push(['explicit', this.app, this.locks.current()!.resources[0]!]);
    await sleep(20);
  }
}

let fleet: RedisFleet;
const apps: INestApplicationContext[] = [];

async function startApp(name: string, provider: typeof Jobs | typeof TickJobs, options: Partial<RedlockModuleOptions>) {
  @Module({
    imports: [ScheduleModule.forRoot(), RedlockModule.forRoot({ nodes: fleet.urls, nodeTimeout: TEST_NODE_TIMEOUT, ...options })],
    providers: [provider],
  })
  class AppModule {}
  const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  app.get<{ app: string }>(provider).app = name;
  await app.init();
  apps.push(app);
  return app;
}

beforeAll(async () => {
  fleet = await startFleet(3);
});

afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.close()));
  runs.length = 0;
});

afterAll(async () => {
  await fleet?.stop();
});

describe("RedlockModule's schedule option", () => {
  it('locks every @Cron, @Interval and @Timeout method on a key from its class and method, skips when busy, and leaves @Unlocked and @Locked methods alone', async () => {
    // Held before the application starts, so that the timeout's one run finds its key busy.
    const other = new Redlock({ nodes: fleet.urls });
    const held = await other.acquire(['schedule:Jobs.everySecond', 'schedule:Jobs.every50ms', 'schedule:Jobs.once'], 10_000);
    const app = await startApp('a', Jobs, { schedule: { ttl: 5000 } });
    const skipped = new Set<string>();
    app
      .get(LockService)
      .events$.pipe(ofLockEvent('skipped'))
      .subscribe((e) => skipped.add(`${e.method} ${e.resources.join()}`));
    await until(
      () => ['everySecond', 'every50ms', 'once'].every((m) => skipped.has(`Jobs.${m} schedule:Jobs.${m}`)),
      'a skipped run of the cron, the interval and the timeout',
      3000,
    );
    expect(runs.filter(([job]) => ['cron', 'interval', 'timeout'].includes(job))).toEqual([]);
    // Opted out: runs without a lock; its own @Locked: runs under its own key.
    await until(() => runs.some(([job]) => job === 'unlocked') && runs.some(([job]) => job === 'own'), 'runs of the other two');
    expect(runs.find(([job]) => job === 'unlocked')![2]).toBe('');
    expect(runs.find(([job]) => job === 'own')![2]).toBe('own-key');

    await held.release();
    await other.close();
    await until(
      () => runs.some(([job]) => job === 'cron') && runs.some(([job]) => job === 'interval'),
      'locked runs once the keys are free',
    );
    expect(runs.find(([job]) => job === 'cron')![2]).toBe('schedule:Jobs.everySecond');
    expect(runs.find(([job]) => job === 'interval')![2]).toBe('schedule:Jobs.every50ms');
  });

  it('refuses a wrong schedule option at bootstrap, naming it', async () => {
    await expect(startApp('x', Jobs, { schedule: { ttl: -1 } })).rejects.toThrow('`schedule.ttl`');
  });
});

describe('{tick}: the scheduled fire time of the run', () => {
  it('three instances, one started late in the tick, run each tick once; a replica late by less than a period finds its tick taken', async () => {
    const options = { schedule: { perTick: true, ttl: 5000 } };
    await Promise.all([startApp('a', TickJobs, options), startApp('b', TickJobs, options)]);
    await sleep(700 - (Date.now() % 1000) + (Date.now() % 1000 > 700 ? 1000 : 0)); // 700 ms into a second
    const late = await startApp('c', TickJobs, options);
    const ticksOf = (job: string) => runs.filter(([j]) => j === job).map(([, , resource]) => Number(resource.split(':').at(-1)));
    await until(() => ticksOf('tick').length >= 3 && ticksOf('explicit').length >= 3, 'three ticks of each job', 8000);

    // A replica whose clock or start is late fires tick T after the others ran it:
    // its key is the same, and it is kept until the next tick. (Tried on a later tick
    // if this machine is too slow to call it 400 ms into this one.)
    let lateCallSkipped = false;
    for (let round = 0; round < 3 && !lateCallSkipped; round++) {
      const [, , resource] = runs.findLast(([j]) => j === 'tick')!;
      const tick = Number(resource.split(':').at(-1));
      await sleep(Math.max(0, tick + 400 - Date.now()));
      if (Date.now() >= tick + 900) continue;
      const skipped = firstValueFrom(late.get(LockService).events$.pipe(ofLockEvent('skipped')));
      await late.get(TickJobs).run();
      expect(await skipped).toMatchObject({ method: 'TickJobs.run', resources: [resource], reason: 'busy' });
      lateCallSkipped = true;
    }
    expect(lateCallSkipped).toBe(true);
    await Promise.all(apps.splice(0).map((app) => app.close()));

    for (const job of ['tick', 'explicit']) {
      const ticks = ticksOf(job);
      expect(new Set(ticks).size).toBe(ticks.length); // never twice in one tick across the three apps
      for (const t of ticks) expect(t % 1000).toBe(0); // the second the cron fired on, not when the run began
    }
    expect(runs.find(([j]) => j === 'tick')![2]).toMatch(/^schedule:TickJobs\.run:\d+$/);
    expect(runs.find(([j]) => j === 'explicit')![2]).toMatch(/^explicit:\d+$/);
  });
});
