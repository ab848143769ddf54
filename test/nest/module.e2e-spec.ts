import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Inject, Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Redis } from 'ioredis';
import { LockService, REDLOCK_CLIENT, Redlock, RedlockModule } from '../../lib/index.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';

@Injectable()
class Config {
  constructor(readonly nodes: string[]) {}
}

@Module({})
class ConfigModule {
  static with(nodes: string[]) {
    return { module: ConfigModule, providers: [{ provide: Config, useValue: new Config(nodes) }], exports: [Config] };
  }
}

@Injectable()
class NeedsClient {
  constructor(
    readonly byClass: Redlock,
    @Inject(REDLOCK_CLIENT) readonly byToken: Redlock,
  ) {}
}

let fleet: RedisFleet;
beforeAll(async () => {
  fleet = await startFleet(3);
});
afterAll(async () => {
  await fleet?.stop();
});

describe('RedlockModule', () => {
  it('forRootAsync builds the client from a factory that reads config; injectable by class and token', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [
        RedlockModule.forRootAsync({
          imports: [ConfigModule.with(fleet.urls)],
          inject: [Config],
          useFactory: (config: Config) => ({ nodes: config.nodes, prefix: 'app:' }),
        }),
      ],
      providers: [NeedsClient],
    }).compile();
    const app = await moduleRef.createNestApplication({ logger: false }).init();
    const needs = app.get(NeedsClient);
    expect(needs.byClass).toBeInstanceOf(Redlock);
    expect(needs.byToken).toBe(needs.byClass);
    const lock = await app.get(LockService).using('cfg', 2000, async (l) => l);
    expect(lock.resources).toEqual(['cfg']);
    // A lock still held at shutdown is released by app.close().
    const held = await app.get(LockService).acquire('held-at-shutdown', 60_000);
    expect(held.isHeld).toBe(true);
    await app.close();
    const raw = new Redis(fleet.urls[0]!);
    expect(await raw.exists('app:lock:held-at-shutdown')).toBe(0);
    raw.disconnect();
  });

  it('leaves a client instance the user passed open on shutdown', async () => {
    const clients = fleet.urls.map((u) => new Redis(u));
    const moduleRef = await Test.createTestingModule({ imports: [RedlockModule.forRoot({ nodes: clients })] }).compile();
    const app = await moduleRef.createNestApplication({ logger: false }).init();
    await app.close();
    expect(await clients[0]!.ping()).toBe('PONG');
    clients.forEach((c) => c.disconnect());
  });

  it('stops the application at bootstrap on an invalid option, naming it', async () => {
    const build = (options: object) =>
      Test.createTestingModule({ imports: [RedlockModule.forRoot({ nodes: fleet.urls, ...options })] })
        .compile()
        .then((m) => m.createNestApplication({ logger: false }).init());
    await expect(build({ driftFactor: 3 })).rejects.toThrow('Expected `driftFactor` to be a number in [0, 1), got 3 (number)');
    await expect(build({ methodBusy: { mode: 'later' } })).rejects.toThrow("Expected `methodBusy.mode` to be 'skip', 'throw' or 'wait'");
    // A misspelt Nest option is refused as a misspelt client option is, not ignored.
    await expect(build({ controllerBusy: { staus: 423 } })).rejects.toThrow(
      'Expected `controllerBusy.staus` to be one of the known options',
    );
    await expect(build({ schedule: { perTik: true } })).rejects.toThrow('Expected `schedule.perTik` to be one of the known options');
    await expect(build({ controllerUnavailable: { statusCode: 500 } })).rejects.toThrow(
      'Expected `controllerUnavailable.statusCode` to be one of the known options',
    );
    await expect(Test.createTestingModule({ imports: [RedlockModule.forRoot({ nodes: [] })] }).compile()).rejects.toThrow(
      'Expected `nodes` to be a non-empty array',
    );
  });
});
