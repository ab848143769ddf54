import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable, type INestApplicationContext } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { LockService, Locked, RedlockModule } from '../../lib/index.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';
import { TEST_NODE_TIMEOUT } from '../support/timeouts.js';

/** Two instances of one class, each locking its own tenant's keys. */
@Injectable()
class TenantImport {
  constructor(
    readonly tenant: string,
    private readonly locks: LockService,
  ) {}

  @Locked<[string], TenantImport>(({ self, args }) => `import:${self.tenant}:${args[0]}`, 5000)
  async byFunction(_file: string) {
    return this.locks.current()!.resources;
  }

  @Locked('import:{self.tenant}:{args.0}', 5000)
  async byTemplate(_file: string) {
    return this.locks.current()!.resources;
  }
}

let fleet: RedisFleet;
let app: INestApplicationContext;

beforeAll(async () => {
  fleet = await startFleet(3);
  const moduleRef = await Test.createTestingModule({
    imports: [RedlockModule.forRoot({ nodes: fleet.urls, nodeTimeout: TEST_NODE_TIMEOUT })],
    providers: [
      { provide: 'acme', inject: [LockService], useFactory: (locks: LockService) => new TenantImport('acme', locks) },
      { provide: 'globex', inject: [LockService], useFactory: (locks: LockService) => new TenantImport('globex', locks) },
    ],
  }).compile();
  app = await moduleRef.createNestApplication({ logger: false }).init();
});

afterAll(async () => {
  await app?.close();
  await fleet?.stop();
});

describe('@Locked keys from the instance (self)', () => {
  it('a key function and a template read the instance the method runs on', async () => {
    const acme = app.get<TenantImport>('acme');
    const globex = app.get<TenantImport>('globex');
    expect(await acme.byFunction('a.csv')).toEqual(['import:acme:a.csv']);
    expect(await globex.byFunction('a.csv')).toEqual(['import:globex:a.csv']);
    expect(await acme.byTemplate('a.csv')).toEqual(['import:acme:a.csv']);
    expect(await globex.byTemplate('a.csv')).toEqual(['import:globex:a.csv']);
  });
});
