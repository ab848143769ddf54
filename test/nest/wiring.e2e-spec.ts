/**
 * How applications wire `@Locked` providers: two RedlockModules (one per
 * feature module), transient providers, an override that calls `super`, a
 * call from a deeper module's `onModuleInit`, and calls that fail before they
 * begin (they reject, as an async method's failures do).
 */
import 'reflect-metadata';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable, Module, Scope, type INestApplicationContext, type OnModuleInit } from '@nestjs/common';
import { LazyModuleLoader, ModuleRef } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import { Redis } from 'ioredis';
import { InvalidArgumentError, Locked, RedlockModule } from '../../lib/index.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';
import { TEST_NODE_TIMEOUT } from '../support/timeouts.js';
import { until } from '../support/until.js';

let fleet: RedisFleet;
let probe: Redis;
const apps: INestApplicationContext[] = [];

beforeAll(async () => {
  fleet = await startFleet(3);
  probe = new Redis(fleet.urls[0]!);
});
afterEach(async () => {
  await Promise.all(apps.splice(0).map((app) => app.close()));
});
afterAll(async () => {
  probe.disconnect();
  await fleet.stop();
});

// Modules are declared before the fleet starts: their options are read when an application starts.
const redlock = (prefix: string) =>
  RedlockModule.forRootAsync({ useFactory: () => ({ nodes: fleet.urls, nodeTimeout: TEST_NODE_TIMEOUT, prefix }) });

/** The prefixes under which `resource` is locked on the first node right now. */
/**
 * The prefixes under which `resource` is locked, read on one node while the lock is held.
 * The lock was taken once a quorum said yes: this node's SET may still be on its way (on
 * another connection than the probe's), so an empty answer is read again for a while.
 */
async function lockedUnder(resource: string, prefixes: string[]): Promise<string[]> {
  const read = async () => {
    const found = await Promise.all(prefixes.map((p) => probe.exists(`${p}lock:${resource}`)));
    return prefixes.filter((_, i) => found[i] === 1);
  };
  let under: string[] = [];
  await until(async () => (under = await read()).length > 0, `a lock on ${resource}`, 1000).catch(() => undefined);
  return under;
}

async function start(root: new () => unknown): Promise<INestApplicationContext> {
  const app = await (await Test.createTestingModule({ imports: [root] }).compile()).init();
  apps.push(app);
  return app;
}

describe('two RedlockModules in one application', () => {
  @Injectable()
  class OrdersWorker {
    @Locked('orders:job', 5000)
    async run(): Promise<string[]> {
      return lockedUnder('orders:job', ['a:', 'b:']);
    }
  }
  @Injectable()
  class BillingWorker {
    @Locked('billing:job', 5000)
    async run(): Promise<string[]> {
      return lockedUnder('billing:job', ['a:', 'b:']);
    }
  }
  @Module({ imports: [redlock('a:')], providers: [OrdersWorker] })
  class OrdersModule {}
  @Module({ imports: [redlock('b:')], providers: [BillingWorker] })
  class BillingModule {}
  @Module({ imports: [OrdersModule, BillingModule] })
  class AppModule {}

  it("each provider's @Locked methods use the module its own module imports", async () => {
    const app = await start(AppModule);
    expect(await app.get(OrdersWorker).run()).toEqual(['a:']);
    expect(await app.get(BillingWorker).run()).toEqual(['b:']);
  });
});

describe('providers Nest makes in other ways', () => {
  @Injectable({ scope: Scope.TRANSIENT })
  class PerConsumer {
    @Locked('transient:job', 5000)
    async run(): Promise<string[]> {
      return lockedUnder('transient:job', ['redlock:']);
    }
  }
  @Injectable()
  class Consumer {
    constructor(readonly job: PerConsumer) {}
  }
  class BaseJob {
    @Locked('base:job', 5000)
    async run(): Promise<string[]> {
      return lockedUnder('base:job', ['redlock:']);
    }
  }
  @Injectable()
  class OverridingJob extends BaseJob {
    override async run(): Promise<string[]> {
      return super.run();
    }
  }
  @Injectable()
  class LazyJob {
    @Locked('lazy:job', 5000)
    async run(): Promise<string[]> {
      return lockedUnder('lazy:job', ['redlock:']);
    }
  }
  @Module({ providers: [LazyJob] })
  class LazyModule {}
  /** Not a provider: made with ModuleRef.create(). */
  @Injectable()
  class Created {
    @Locked('created:job', 5000)
    async run(): Promise<string[]> {
      return lockedUnder('created:job', ['redlock:']);
    }
  }
  @Module({ imports: [redlock('redlock:')], providers: [PerConsumer, Consumer, OverridingJob] })
  class AppModule {}

  it('a transient provider, injected into another', async () => {
    const app = await start(AppModule);
    expect(await app.get(Consumer).job.run()).toEqual(['redlock:']);
  });

  it('an override without @Locked that calls the locked method of its base class', async () => {
    const app = await start(AppModule);
    expect(await app.get(OverridingJob).run()).toEqual(['redlock:']);
  });

  it('a provider of a module loaded lazily, after the init scans (LazyModuleLoader)', async () => {
    const app = await start(AppModule);
    const lazy = await app.get(LazyModuleLoader).load(() => LazyModule);
    expect(await lazy.get(LazyJob).run()).toEqual(['redlock:']);
  });

  it('an instance made with ModuleRef.create(), served by the one RedlockModule of the application', async () => {
    const app = await start(AppModule);
    const created = await app.get(ModuleRef).create(Created);
    expect(await created.run()).toEqual(['redlock:']);
  });

  it('an instance made with new, shared by tests that each start an application: served by the one running', async () => {
    const shared = new Created();
    const first = await start(AppModule);
    expect(await shared.run()).toEqual(['redlock:']);
    await first.close();
    apps.splice(0);
    await start(AppModule);
    expect(await shared.run()).toEqual(['redlock:']);
  });
});

describe('a call from the onModuleInit of a provider in a deeper module', () => {
  const ran: string[][] = [];
  @Injectable()
  class Migrator implements OnModuleInit {
    @Locked('migrations', 5000)
    async migrate(): Promise<void> {
      ran.push(await lockedUnder('migrations', ['redlock:']));
    }
    async onModuleInit(): Promise<void> {
      await this.migrate();
    }
  }
  @Module({ providers: [Migrator] })
  class DbModule {}
  @Module({ imports: [DbModule] })
  class OrdersModule {}
  @Module({ imports: [redlock('redlock:'), OrdersModule] })
  class AppModule {}

  it('runs locked (Nest inits deeper modules first)', async () => {
    await start(AppModule);
    expect(ran).toEqual([['redlock:']]);
  });
});

describe('calls that fail before they begin', () => {
  @Injectable()
  class Imports {
    @Locked('import:{args.0}', 5000)
    async run(_id?: string): Promise<void> {}
  }
  @Module({ imports: [redlock('redlock:')], providers: [Imports] })
  class AppModule {}

  it('reject, rather than throw where .catch() does not see it: a key its arguments cannot fill', async () => {
    const app = await start(AppModule);
    let call: Promise<void> | undefined;
    expect(() => (call = app.get(Imports).run(undefined))).not.toThrow();
    await expect(call).rejects.toBeInstanceOf(InvalidArgumentError);
  });

  it('reject: an instance no RedlockModule manages', async () => {
    let call: Promise<void> | undefined;
    expect(() => (call = new Imports().run('1'))).not.toThrow();
    await expect(call).rejects.toThrow(/no RedlockModule manages: no RedlockModule is running/);
  });

  it('@Locked on a static method is refused where it is applied', () => {
    const decorate = () => {
      class Jobs {
        @Locked('static', 5000)
        static async run(): Promise<void> {}
      }
      return Jobs;
    };
    expect(decorate).toThrow(/instance methods/);
  });
});
