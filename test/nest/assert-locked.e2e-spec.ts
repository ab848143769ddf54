import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { LockLostError, LockService, Locked, NotLockedError, RedlockModule, assertLocked, type Lock } from '../../lib/index.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';
import { TEST_NODE_TIMEOUT } from '../support/timeouts.js';

@Injectable()
class Ledger {
  /** Must only run under a lock on its account: the check ShedLock users know as LockAssert. */
  settle(account: string): Lock {
    return assertLocked(`account:${account}`);
  }

  @Locked('account:{args.0}', 5000)
  async settleLocked(account: string): Promise<Lock> {
    return this.settle(account);
  }

  @Locked('report', 5000)
  async underAnotherLock(account: string): Promise<Lock> {
    return this.settle(account);
  }
}

let fleet: RedisFleet;
let app: INestApplication;
beforeAll(async () => {
  fleet = await startFleet(3);
  const ref = await Test.createTestingModule({
    imports: [RedlockModule.forRoot({ nodes: fleet.urls, nodeTimeout: TEST_NODE_TIMEOUT })],
    providers: [Ledger],
  }).compile();
  app = await ref.createNestApplication({ logger: false }).init();
});
afterAll(async () => {
  await app?.close();
  await fleet?.stop();
});

describe('assertLocked()', () => {
  it('returns the lock under @Locked and LockService.using', async () => {
    const ledger = app.get(Ledger);
    const lock = await ledger.settleLocked('7');
    expect(lock.resources).toEqual(['account:7']);
    const locks = app.get(LockService);
    const inside = await locks.using('account:8', 5000, (held) => {
      expect(assertLocked()).toBe(held);
      return ledger.settle('8');
    });
    expect(inside.resources).toEqual(['account:8']);
  });

  it('throws NotLockedError (NOT_LOCKED) outside any lock, and under a lock on another resource', async () => {
    const ledger = app.get(Ledger);
    expect(() => ledger.settle('9')).toThrow(NotLockedError);
    expect(() => assertLocked()).toThrow(expect.objectContaining({ code: 'NOT_LOCKED' }));
    await expect(ledger.underAnotherLock('9')).rejects.toMatchObject({ code: 'NOT_LOCKED', resource: 'account:9' });
  });

  it('throws LockLostError when the chain’s lock is no longer held (work that outlived its lock)', async () => {
    const locks = app.get(LockService);
    let open!: () => void;
    const released = new Promise<void>((resolve) => (open = resolve));
    let detached!: Promise<Lock>;
    await locks.using('account:11', 5000, () => {
      // Work started under the lock and left running: it goes on after the release, in the lock's context.
      detached = released.then(() => assertLocked('account:11'));
    });
    open();
    await expect(detached).rejects.toBeInstanceOf(LockLostError);
    await expect(detached).rejects.toMatchObject({ reason: 'released' });
  });
});
