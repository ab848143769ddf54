import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable, Logger, type LoggerService } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { metrics, trace } from '@opentelemetry/api';
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { Redis } from 'ioredis';
import { firstValueFrom, take, toArray } from 'rxjs';
import { LockService, Locked, RedlockModule, ofLockEvent } from '../../lib/index.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';
import { until } from '../support/until.js';
import { TEST_NODE_TIMEOUT } from '../support/timeouts.js';

const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
const reader = new PeriodicExportingMetricReader({ exporter: metricExporter, exportIntervalMillis: 60_000 });
const spanExporter = new InMemorySpanExporter();
metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));
trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spanExporter)] }));

/** Every line logged, with its level and context. */
const lines: { level: string; message: string; context?: string }[] = [];
const recorder: LoggerService = Object.fromEntries(
  ['log', 'error', 'warn', 'debug', 'verbose', 'fatal'].map((level) => [
    level,
    (message: unknown, ...rest: unknown[]) => lines.push({ level, message: String(message), context: rest.at(-1) as string }),
  ]),
) as unknown as LoggerService;

let fleet: RedisFleet;
let raw: Redis;

beforeAll(async () => {
  fleet = await startFleet(3);
  raw = new Redis(fleet.urls[0]!);
});
afterAll(async () => {
  raw?.disconnect();
  await fleet?.stop();
});

describe('observability', () => {
  it('records metrics and spans with OpenTelemetry, and logs at sensible levels, never a lock value', async () => {
    const ref = await Test.createTestingModule({
      imports: [RedlockModule.forRoot({ nodes: fleet.urls, retryCount: 0, nodeTimeout: TEST_NODE_TIMEOUT })],
    })
      .setLogger(recorder)
      .compile();
    const app = await ref.createNestApplication({ logger: recorder }).init();
    Logger.overrideLogger(recorder);
    const locks = app.get(LockService);

    const lock = await locks.acquire('observed', 1000, { autoExtend: true });
    // Decided at a quorum: node 0 may still be answering.
    await until(async () => (await raw.exists('redlock:lock:observed')) === 1, 'the key on node 0');
    const value = (await raw.get('redlock:lock:observed'))!;
    await expect(locks.acquire('observed', 1000)).rejects.toMatchObject({ code: 'RESOURCE_BUSY' });
    await until(() => lock.extensions > 0, 'an extension');
    const lost = firstValueFrom(locks.events$.pipe(ofLockEvent('lost')));
    await Promise.all(
      fleet.urls.map(async (url) => {
        const node = new Redis(url);
        await node.del('redlock:lock:observed');
        node.disconnect();
      }),
    );
    await lost;
    const other = await locks.acquire('observed-2', 1000);
    await other.release();
    await app.close();

    await reader.forceFlush();
    const names = new Set(
      metricExporter.getMetrics().flatMap((m) => m.scopeMetrics.flatMap((s) => s.metrics.map((x) => x.descriptor.name))),
    );
    expect([...names]).toEqual(
      expect.arrayContaining(['redlock.acquire.duration', 'redlock.held.duration', 'redlock.extensions', 'redlock.lost']),
    );
    const spans = spanExporter.getFinishedSpans().filter((s) => s.name === 'redlock.acquire');
    expect(spans.map((s) => s.attributes['redlock.outcome'])).toEqual(expect.arrayContaining(['acquired', 'busy']));

    const redlockLines = lines.filter((l) => l.context === 'Redlock');
    expect(redlockLines.find((l) => l.message.includes('lost'))?.level).toBe('error');
    expect(redlockLines.find((l) => l.message.includes('busy'))?.level).toBe('debug');
    expect(JSON.stringify(lines)).not.toContain(value);
    expect(JSON.stringify(spanExporter.getFinishedSpans().map((s) => s.attributes))).not.toContain(value);
  });

  it('gives lock metrics a bounded method attribute (never the resource) and gauges of locks held and waiters waiting', async () => {
    const app = await (
      await Test.createTestingModule({
        imports: [RedlockModule.forRoot({ nodes: fleet.urls, nodeTimeout: TEST_NODE_TIMEOUT, logger: false })],
        providers: [Jobs],
      }).compile()
    )
      .createNestApplication({ logger: false })
      .init();
    const jobs = app.get(Jobs);
    const { client, events$ } = app.get(LockService);
    const released = firstValueFrom(events$.pipe(ofLockEvent('released'), take(2), toArray()));
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const first = jobs.run('customer-8841', gate);
    await until(() => client.stats.held === 1, 'the first run holding its lock');
    const second = jobs.run('customer-8841', Promise.resolve());
    await until(() => client.stats.waiting === 1, 'the second run waiting');
    expect(await jobs.skip('customer-8841')).toBeUndefined(); // busy: skipped

    const during = await collect();
    expect(during.points('redlock.locks.held')).toContainEqual({ attributes: { method: 'Jobs.run' }, value: 1 });
    expect(during.points('redlock.waiters')).toContainEqual({ attributes: {}, value: 1 });
    open();
    await Promise.all([first, second, released]);

    const after = await collect();
    expect(after.points('redlock.waiters')).toContainEqual({ attributes: {}, value: 0 });
    expect(after.points('redlock.locks.held')).toContainEqual({ attributes: { method: 'Jobs.run' }, value: 0 });
    expect(after.points('redlock.locks.held')).toContainEqual({ attributes: {}, value: 0 });
    const acquired = after.points('redlock.acquire.duration').map((p) => p.attributes);
    expect(acquired).toContainEqual({ method: 'Jobs.run', outcome: 'acquired' });
    expect(acquired).toContainEqual({ method: 'Jobs.skip', outcome: 'busy' });
    expect(after.points('redlock.skipped').map((p) => p.attributes)).toContainEqual({ method: 'Jobs.skip' });
    expect(after.points('redlock.held.duration').map((p) => p.attributes)).toContainEqual({ method: 'Jobs.run' });
    expect(JSON.stringify(after.all)).not.toContain('customer-8841');
    await app.close();
  });
});

@Injectable()
class Jobs {
  @Locked('job:{args.0}', 5000, { busy: { mode: 'wait', wait: 20_000 } })
  async run(_customer: string, until: Promise<void>): Promise<void> {
    await until;
  }

  @Locked('job:{args.0}', 5000)
  async skip(_customer: string): Promise<string> {
    return 'ran';
  }
}

/** The metrics as last exported: each metric's data points by name. */
async function collect() {
  await reader.forceFlush();
  const last = metricExporter.getMetrics().at(-1)!;
  const all = last.scopeMetrics.flatMap((s) => s.metrics);
  const points = (name: string) =>
    all
      .filter((m) => m.descriptor.name === name)
      .flatMap((m) => m.dataPoints.map((p) => ({ attributes: p.attributes, value: p.value as number })));
  return { all, points };
}
