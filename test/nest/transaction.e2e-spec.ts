import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable, type INestApplicationContext } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Redis } from 'ioredis';
import { LockService, Locked, RedlockModule, ofLockEvent } from '../../lib/index.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';
import { until } from '../support/until.js';
import { TEST_NODE_TIMEOUT } from '../support/timeouts.js';

/** What happened, in order: a transaction's commit and a lock's release, by lock id. */
const order: ['commit' | 'released', string][] = [];

/** A database whose transactions read committed data and write at commit (MULTI/EXEC on a Redis of its own). */
class Database {
  constructor(private readonly redis: Redis) {}

  async transaction(work: (tx: { get(key: string): Promise<number>; set(key: string, value: number): void }) => Promise<void>) {
    const writes = new Map<string, number>();
    await work({ get: async (key) => Number((await this.redis.get(key)) ?? 0), set: (key, value) => writes.set(key, value) });
    const multi = this.redis.multi();
    for (const [key, value] of writes) multi.set(key, value);
    await multi.exec();
  }
}

@Injectable()
class Accounts {
  constructor(
    private readonly db: Database,
    private readonly locks: LockService,
  ) {}

  // The rule: the lock wraps the transaction, so the commit happens before the release.
  @Locked('account:{args.0}', 5000, { busy: { mode: 'wait', wait: 20_000 } })
  async credit(account: string, amount: number) {
    await this.db.transaction(async (tx) => {
      tx.set(account, (await tx.get(account)) + amount);
    });
    order.push(['commit', this.locks.current()!.id]);
  }
}

let fleet: RedisFleet;
let database: RedisFleet;
let redis: Redis;
let app: INestApplicationContext;

beforeAll(async () => {
  [fleet, database] = await Promise.all([startFleet(3), startFleet(1)]);
  redis = new Redis(database.urls[0]!);
  const moduleRef = await Test.createTestingModule({
    imports: [RedlockModule.forRoot({ nodes: fleet.urls, nodeTimeout: TEST_NODE_TIMEOUT })],
    providers: [Accounts, { provide: Database, useValue: new Database(redis) }],
  }).compile();
  app = await moduleRef.createNestApplication({ logger: false }).init();
  app
    .get(LockService)
    .events$.pipe(ofLockEvent('released'))
    .subscribe((e) => order.push(['released', e.lockId]));
});

afterAll(async () => {
  await app?.close();
  redis?.disconnect();
  await Promise.all([fleet?.stop(), database?.stop()]);
});

describe('a lock around a transaction', () => {
  it('commits before it releases: concurrent read-modify-write transactions lose no update', async () => {
    const accounts = app.get(Accounts);
    await Promise.all(Array.from({ length: 10 }, () => accounts.credit('acct-1', 1)));
    expect(Number(await redis.get('acct-1'))).toBe(10);
    // A call resolves when its body has; the release it started ends a moment later.
    await until(() => order.filter(([what]) => what === 'released').length === 10, 'the ten releases');
    const commits = order.filter(([what]) => what === 'commit');
    expect(commits).toHaveLength(10);
    for (const [, lockId] of commits) {
      const committed = order.findIndex(([what, id]) => what === 'commit' && id === lockId);
      const released = order.findIndex(([what, id]) => what === 'released' && id === lockId);
      expect(released).toBeGreaterThan(committed);
    }
  });
});
