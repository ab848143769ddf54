import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { firstValueFrom } from 'rxjs';
import { LockService, Locked, RedlockModule, assertLocked, ofLockEvent } from '../../lib/index.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';
import { TEST_NODE_TIMEOUT } from '../support/timeouts.js';

let entered!: () => void;
let finish!: () => void;

@Injectable()
class Reports {
  /** A job that hangs until the test lets it go: what an operator force-releases. */
  @Locked('report:{args.0}', 600)
  async build(_day: string): Promise<string> {
    const { signal } = assertLocked();
    entered();
    await new Promise<void>((resolve) => (finish = resolve));
    return signal.aborted ? 'aborted' : 'done';
  }
}

/** Two imports at most at once; each hangs until the test lets it go, and says whether its permit was taken from it. */
@Injectable()
class Imports {
  readonly running = new Map<string, { entered: () => void; finish?: () => void }>();

  // 2 s: a limit-2 permit needs all 3 nodes' votes to be extended, so a loaded node must not cost it its permit.
  @Locked('import', 2000, { limit: 2 })
  async run(name: string): Promise<string> {
    const { signal } = assertLocked();
    const job = this.running.get(name)!;
    await new Promise<void>((resolve) => ((job.finish = resolve), job.entered()));
    return signal.aborted ? 'aborted' : 'done';
  }
}

let fleet: RedisFleet;
let app: INestApplication;
beforeAll(async () => {
  fleet = await startFleet(3);
  const ref = await Test.createTestingModule({
    imports: [RedlockModule.forRoot({ nodes: fleet.urls, nodeTimeout: TEST_NODE_TIMEOUT, identity: { app: 'reports' } })],
    providers: [Reports, Imports],
  }).compile();
  app = await ref.createNestApplication({ logger: false }).init();
});
afterAll(async () => {
  await app?.close();
  await fleet?.stop();
});

describe('LockService admin operations', () => {
  it('lists a running @Locked job and force-releases it: the job’s next extension reports the loss', async () => {
    const locks = app.get(LockService);
    const inside = new Promise<void>((resolve) => (entered = resolve));
    const job = app.get(Reports).build('2026-11-24');
    await inside;
    const { locks: found } = await locks.list('report:*');
    expect(found).toMatchObject([{ resource: 'report:2026-11-24', held: true, identity: { app: 'reports' } }]);
    const lost = firstValueFrom(locks.events$.pipe(ofLockEvent('lost')));
    const result = await locks.forceRelease('report:2026-11-24', { holder: found[0]!.holder });
    expect(result.releasedOn).toBeGreaterThanOrEqual(2);
    // The job's automatic extension (at half its 600 ms ttl) finds the keys gone.
    expect(await lost).toMatchObject({ resources: ['report:2026-11-24'], reason: 'keys-gone' });
    finish();
    expect(await job).toBe('aborted');
    expect((await locks.list('report:*')).locks).toEqual([]);
  });

  it('lists the holders of a @Locked semaphore and evicts one: that run alone is told, the other goes on', async () => {
    const locks = app.get(LockService);
    const imports = app.get(Imports);
    const started = ['a', 'b'].map((name) => new Promise<void>((entered) => imports.running.set(name, { entered })));
    const runs = ['a', 'b'].map((name) => imports.run(name));
    await Promise.all(started);
    const [listed] = (await locks.list('import')).locks;
    expect(listed).toMatchObject({ resource: 'import', kind: 'semaphore', limit: 2, held: true });
    expect(listed!.holders.map((h) => h.identity)).toEqual([{ app: 'reports' }, { app: 'reports' }]);
    const lost = firstValueFrom(locks.events$.pipe(ofLockEvent('lost')));
    const evicted = await locks.forceRelease('import', { holder: listed!.holders[0]!.holder });
    expect(evicted).toMatchObject({ kind: 'semaphore', holder: listed!.holders[0]!.holder });
    expect(evicted.releasedOn).toBeGreaterThanOrEqual(2);
    expect(await lost).toMatchObject({ resources: ['import'], reason: 'keys-gone' });
    for (const job of imports.running.values()) job.finish!();
    // Which run held the evicted permit is the nodes' secret: one of the two was aborted, the other was not.
    expect((await Promise.all(runs)).sort()).toEqual(['aborted', 'done']);
  });
});
