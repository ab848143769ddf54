import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Controller, type INestApplication, type INestMicroservice, type LoggerService } from '@nestjs/common';
import { ClientProxyFactory, EventPattern, MessagePattern, Payload, Transport, type ClientProxy } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { filter, firstValueFrom } from 'rxjs';
import { LockService, Locked, RedlockModule, ofLockEvent } from '../../lib/index.js';
import { until } from '../support/until.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';
import { TEST_NODE_TIMEOUT } from '../support/timeouts.js';

const balances = new Map<string, number>();

@Controller()
class PaymentsHandler {
  @MessagePattern('pay')
  @Locked('account:{data.account}', 2000)
  async pay(@Payload() data: { account: string; amount: number }) {
    const read = balances.get(data.account) ?? 0;
    await sleep(50);
    balances.set(data.account, read + data.amount);
    return balances.get(data.account);
  }

  audits: string[] = [];
  auditDone: () => void = () => undefined;

  @EventPattern('audit')
  @Locked('audit:{data.id}', 2000)
  async audit(@Payload() data: { id: string; n: number }) {
    this.audits.push(`${data.id}#${data.n}`);
    if (data.n === 1) await new Promise<void>((resolve) => (this.auditDone = resolve));
  }
}

const freePort = () =>
  new Promise<number>((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });

let fleet: RedisFleet;
let service: INestMicroservice;
let client: ClientProxy;

beforeAll(async () => {
  fleet = await startFleet(3);
  const port = await freePort();
  const moduleRef = await Test.createTestingModule({
    imports: [RedlockModule.forRoot({ nodes: fleet.urls, nodeTimeout: TEST_NODE_TIMEOUT })],
    controllers: [PaymentsHandler],
  }).compile();
  service = moduleRef.createNestMicroservice({ transport: Transport.TCP, options: { host: '127.0.0.1', port }, logger: false });
  await service.listen();
  client = ClientProxyFactory.create({ transport: Transport.TCP, options: { host: '127.0.0.1', port } });
  await client.connect();
});

afterAll(async () => {
  await client?.close();
  await service?.close();
  await fleet?.stop();
});

describe('@Locked on a microservice message handler', () => {
  it('locks on a key from the message; a concurrent message for the same key is refused', async () => {
    const results = await Promise.allSettled([1, 2, 3].map((amount) => firstValueFrom(client.send('pay', { account: 'acc-1', amount }))));
    const ok = results.filter((r) => r.status === 'fulfilled');
    expect(ok).toHaveLength(1);
    const refused = results.filter((r) => r.status === 'rejected');
    expect(refused).toHaveLength(2);
    // The caller can tell busy from a crash ('Internal server error', logged with a stack).
    for (const r of refused) {
      expect(r.reason).toEqual({ status: 'error', code: 'RESOURCE_BUSY', message: 'The resource is locked by another request' });
    }
    expect(balances.get('acc-1')).toBe((ok[0] as PromiseFulfilledResult<number>).value);
    // Another account is another resource.
    expect(await firstValueFrom(client.send('pay', { account: 'acc-2', amount: 5 }))).toBe(5);
  });
});

describe('@Locked on a microservice event handler', () => {
  it('skips an event whose key is busy, with a skipped event, as a provider method (no caller to answer)', async () => {
    const handler = service.get(PaymentsHandler);
    const skipped = firstValueFrom(
      service.get(LockService).events$.pipe(
        ofLockEvent('skipped'),
        filter((e) => e.method === 'PaymentsHandler.audit'),
      ),
    );
    client.emit('audit', { id: 'a', n: 1 });
    await until(() => handler.audits.length === 1, 'the first event running');
    client.emit('audit', { id: 'a', n: 2 });
    expect(await skipped).toMatchObject({ reason: 'busy', resources: ['audit:a'] });
    handler.auditDone();
    expect(handler.audits).toEqual(['a#1']);
  });
});

describe('@Locked on the message handler of a hybrid application', () => {
  /** An HTTP application with a TCP microservice connected, and what the module logged. */
  async function hybrid(inheritAppConfig: boolean) {
    const warnings: string[] = [];
    const logger: LoggerService = { log: () => undefined, error: () => undefined, warn: (m: unknown) => void warnings.push(String(m)) };
    const port = await freePort();
    const moduleRef = await Test.createTestingModule({
      imports: [RedlockModule.forRoot({ nodes: fleet.urls, nodeTimeout: TEST_NODE_TIMEOUT, logger })],
      controllers: [PaymentsHandler],
    }).compile();
    const app: INestApplication = moduleRef.createNestApplication({ logger: false });
    app.connectMicroservice({ transport: Transport.TCP, options: { host: '127.0.0.1', port } }, { inheritAppConfig });
    await app.startAllMicroservices();
    await app.init();
    const proxy = ClientProxyFactory.create({ transport: Transport.TCP, options: { host: '127.0.0.1', port } });
    await proxy.connect();
    return { app, proxy, warnings };
  }

  it('says, once, that a microservice connected without inheritAppConfig runs it without the module interceptor', async () => {
    const { app, proxy, warnings } = await hybrid(false);
    try {
      // Its key reads the message, which only the interceptor gives it: the call fails.
      await expect(firstValueFrom(proxy.send('pay', { account: 'acc-3', amount: 1 }))).rejects.toBeDefined();
      await expect(firstValueFrom(proxy.send('pay', { account: 'acc-3', amount: 1 }))).rejects.toBeDefined();
      expect(warnings.filter((w) => w.includes('PaymentsHandler.pay') && w.includes('inheritAppConfig: true'))).toHaveLength(1);
    } finally {
      await proxy.close();
      await app.close();
    }
  });

  it('locks on a key from the message with inheritAppConfig, with no warning', async () => {
    const { app, proxy, warnings } = await hybrid(true);
    try {
      expect(await firstValueFrom(proxy.send('pay', { account: 'acc-4', amount: 7 }))).toBe(7);
      expect(warnings).toEqual([]);
    } finally {
      await proxy.close();
      await app.close();
    }
  });
});
