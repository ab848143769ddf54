import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Logger, type LoggerService } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { metrics, trace } from '@opentelemetry/api';
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { Redis } from 'ioredis';
import { firstValueFrom } from 'rxjs';
import { LockService, RedlockModule, ofLockEvent } from '../../lib/index.js';
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
});
