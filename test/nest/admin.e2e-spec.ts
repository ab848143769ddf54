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

let fleet: RedisFleet;
let app: INestApplication;
beforeAll(async () => {
  fleet = await startFleet(3);
  const ref = await Test.createTestingModule({
    imports: [RedlockModule.forRoot({ nodes: fleet.urls, nodeTimeout: TEST_NODE_TIMEOUT, identity: { app: 'reports' } })],
    providers: [Reports],
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
});
