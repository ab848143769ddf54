import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Controller, Get, type INestApplication, Module } from '@nestjs/common';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { Redlock, RedlockModule } from '../../lib/index.js';
import { RedlockHealthIndicator, RedlockHealthModule, type RedlockHealthDetails } from '../../lib/health/index.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';
import { TEST_NODE_TIMEOUT } from '../support/timeouts.js';

/** Health-check timeout used throughout, ms. */
const TIMEOUT = 300;
/** What a loaded CI machine may add on top of the timeout, ms. */
const MARGIN = 700;
const SECRET = 's3cret-never-shown';

@Controller('health')
class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly redlock: RedlockHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check() {
    return this.health.check([() => this.redlock.isHealthy('redlock', { timeout: TIMEOUT })]);
  }
}

@Module({ imports: [TerminusModule.forRoot({ logger: false }), RedlockHealthModule], controllers: [HealthController] })
class HealthModule {}

let fleet: RedisFleet;
let app: INestApplication;
let indicator: RedlockHealthIndicator;
let labels: string[];

beforeAll(async () => {
  fleet = await startFleet(5);
  // Node 0 is given with credentials: they must never reach the health details.
  const nodes = fleet.urls.map((url, i) => (i === 0 ? url.replace('redis://', `redis://default:${SECRET}@`) : url));
  const moduleRef = await Test.createTestingModule({
    // RedlockModule is not global: the indicator finds the client anyway.
    imports: [RedlockModule.forRoot({ nodes, nodeTimeout: TEST_NODE_TIMEOUT }), HealthModule],
  }).compile();
  app = await moduleRef.createNestApplication({ logger: false }).init();
  await app.get(Redlock).ready();
  indicator = app.get(RedlockHealthIndicator);
  labels = fleet.ports.map((port) => `127.0.0.1:${port}/0`);
});

afterAll(async () => {
  await app?.close();
  await fleet?.stop();
});

const getHealth = () => request(app.getHttpServer()).get('/health');

// One fleet, scenarios in order: all up, a hung node (resumed), one killed, three killed.
describe('RedlockHealthIndicator against 5 real nodes', () => {
  it('all up: 200, status up, 5 of 5 nodes up with their latency, no credentials', async () => {
    const res = await getHealth().expect(200);
    expect(res.body.status).toBe('ok');
    const details = res.body.details.redlock as RedlockHealthDetails;
    expect(details).toMatchObject({ status: 'up', quorum: 3, up: 5, total: 5 });
    expect(Object.keys(details.nodes)).toEqual(labels);
    for (const node of Object.values(details.nodes)) {
      expect(node.status).toBe('up');
      expect(node.latencyMs).toBeGreaterThanOrEqual(0);
      expect(node.latencyMs).toBeLessThan(TIMEOUT);
      expect(node.error).toBeUndefined();
    }
    expect(details.message).toBeUndefined();
    expect(JSON.stringify(res.body)).not.toContain(SECRET);
  });

  it('reports under the key it is given, and rejects an invalid timeout naming it', async () => {
    const result = await indicator.isHealthy('locks');
    expect(Object.keys(result)).toEqual(['locks']);
    expect(result.locks.status).toBe('up');
    await expect(indicator.isHealthy('redlock', { timeout: 0 })).rejects.toThrow('Expected `timeout` to be a positive integer');
  });

  it('a paused (hung) node: the check returns within the timeout, up, with that node down', async () => {
    await fleet.pause(1);
    try {
      const t0 = performance.now();
      const res = await getHealth().expect(200);
      const elapsed = performance.now() - t0;
      expect(elapsed).toBeLessThan(TIMEOUT + MARGIN);
      const details = res.body.details.redlock as RedlockHealthDetails;
      expect(details).toMatchObject({ status: 'up', up: 4, total: 5 });
      expect(details.nodes[labels[1]!]).toEqual({
        status: 'down',
        latencyMs: expect.any(Number),
        error: `no answer within ${TIMEOUT} ms`,
      });
      expect(details.nodes[labels[1]!]!.latencyMs).toBeGreaterThanOrEqual(TIMEOUT - 1);

      // Through the indicator directly, too.
      const t1 = performance.now();
      const direct = await indicator.isHealthy('redlock', { timeout: TIMEOUT });
      expect(performance.now() - t1).toBeLessThan(TIMEOUT + MARGIN);
      expect(direct.redlock.nodes[labels[1]!]!.status).toBe('down');
    } finally {
      await fleet.resume(1);
    }
    // Once it answers again, it is up again.
    const res = await getHealth().expect(200);
    expect(res.body.details.redlock).toMatchObject({ status: 'up', up: 5 });
  });

  it('one node killed: still up (4 of 5), the details show that node down with its error', async () => {
    await fleet.kill(0);
    const res = await getHealth().expect(200);
    expect(res.body.status).toBe('ok');
    const details = res.body.details.redlock as RedlockHealthDetails;
    expect(details).toMatchObject({ status: 'up', quorum: 3, up: 4, total: 5 });
    const down = details.nodes[labels[0]!]!;
    expect(down.status).toBe('down');
    expect(down.error).toEqual(expect.any(String));
    expect(down.error!.length).toBeGreaterThan(0);
    for (const label of labels.slice(1)) expect(details.nodes[label]!.status).toBe('up');
    expect(JSON.stringify(res.body)).not.toContain(SECRET);
  });

  it('three nodes killed: 503 from HealthCheckService, down with every node in the details', async () => {
    await Promise.all([fleet.kill(1), fleet.kill(2)]);
    const t0 = performance.now();
    const res = await getHealth().expect(503);
    expect(performance.now() - t0).toBeLessThan(TIMEOUT + MARGIN);
    expect(res.body.status).toBe('error');
    const details = res.body.error.redlock as RedlockHealthDetails;
    expect(res.body.details.redlock).toEqual(details);
    expect(details).toMatchObject({ status: 'down', quorum: 3, up: 2, total: 5, message: '2 of 5 Redlock nodes up; a lock needs 3' });
    expect(labels.map((l) => details.nodes[l]!.status)).toEqual(['down', 'down', 'down', 'up', 'up']);
    for (const label of labels.slice(0, 3)) expect(details.nodes[label]!.error).toEqual(expect.any(String));
    expect(JSON.stringify(res.body)).not.toContain(SECRET);

    // The indicator itself reports down (terminus style) rather than throwing.
    const direct = await indicator.isHealthy();
    expect(direct.redlock).toMatchObject({ status: 'down', up: 2 });
    // And HealthCheckService rejects with the details.
    const error = await app
      .get(HealthCheckService)
      .check([() => indicator.isHealthy('redlock', { timeout: TIMEOUT })])
      .then(
        () => undefined,
        (e: unknown) => e as { getStatus(): number; getResponse(): { error: Record<string, RedlockHealthDetails> } },
      );
    expect(error?.getStatus()).toBe(503);
    expect(error?.getResponse().error.redlock.up).toBe(2);
  });
});

describe('RedlockHealthModule without RedlockModule', () => {
  it('stops the application at bootstrap, saying what is missing', async () => {
    const moduleRef = await Test.createTestingModule({ imports: [RedlockHealthModule] }).compile();
    await expect(moduleRef.createNestApplication({ logger: false }).init()).rejects.toThrow(
      'RedlockHealthIndicator found no Redlock client: import RedlockModule.forRoot(...)',
    );
  });
});
