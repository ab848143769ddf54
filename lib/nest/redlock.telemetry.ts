import { Injectable, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import type { Subscription } from 'rxjs';
import { LockService } from './lock.service.js';

type OtelApi = typeof import('@opentelemetry/api');

/**
 * Metrics and spans through `@opentelemetry/api` when the application has it
 * installed (an optional peer dependency); nothing otherwise. Instruments, on
 * the `nest-redlock` meter:
 * - `redlock.acquire.duration` (histogram, ms; `outcome`: acquired | busy | failed)
 * - `redlock.held.duration` (histogram, ms)
 * - `redlock.extensions`, `redlock.extension.failures`, `redlock.skipped`,
 *   `redlock.lost` (`reason`), `redlock.node.errors` (`node`), `redlock.node.restarts` (counters)
 * and a `redlock.acquire` span per acquisition. No resource names (unbounded
 * cardinality) in metrics, no lock values anywhere.
 */
@Injectable()
export class RedlockTelemetry implements OnModuleInit, OnModuleDestroy {
  private subscription: Subscription | undefined;

  constructor(private readonly locks: LockService) {}

  async onModuleInit(): Promise<void> {
    const api = await loadOpenTelemetry();
    if (!api) return;
    const meter = api.metrics.getMeter('nest-redlock');
    const tracer = api.trace.getTracer('nest-redlock');
    const acquireDuration = meter.createHistogram('redlock.acquire.duration', { unit: 'ms' });
    const heldDuration = meter.createHistogram('redlock.held.duration', { unit: 'ms' });
    const extensions = meter.createCounter('redlock.extensions');
    const extensionFailures = meter.createCounter('redlock.extension.failures');
    const skipped = meter.createCounter('redlock.skipped');
    const lost = meter.createCounter('redlock.lost');
    const nodeErrors = meter.createCounter('redlock.node.errors');
    const nodeRestarts = meter.createCounter('redlock.node.restarts');

    type Attempted = { at: number; elapsed: number; attempts: number; resources: readonly string[] };
    const span = (event: Attempted, outcome: string, error?: string) => {
      const s = tracer.startSpan('redlock.acquire', {
        startTime: event.at - event.elapsed,
        attributes: { 'redlock.resources': event.resources.length, 'redlock.attempts': event.attempts, 'redlock.outcome': outcome },
      });
      if (error) s.setStatus({ code: api.SpanStatusCode.ERROR, message: error });
      s.end(event.at);
    };

    this.subscription = this.locks.events$.subscribe((event) => {
      switch (event.type) {
        case 'acquired':
          acquireDuration.record(event.elapsed, { outcome: 'acquired' });
          return span(event, 'acquired');
        case 'busy':
          acquireDuration.record(event.elapsed, { outcome: 'busy' });
          return span(event, 'busy', 'RESOURCE_BUSY');
        case 'acquire-failed':
          acquireDuration.record(event.elapsed, { outcome: 'failed', code: event.code });
          return span(event, 'failed', event.code);
        case 'released':
          return heldDuration.record(event.heldFor);
        case 'extended':
          return extensions.add(1);
        case 'extend-failed':
          return extensionFailures.add(1, { code: event.code });
        case 'skipped':
          return skipped.add(1);
        case 'lost':
          return lost.add(1, { reason: event.reason });
        case 'node-error':
          return nodeErrors.add(1, { node: event.node });
        case 'node-restarted':
          return nodeRestarts.add(1, { node: event.node });
      }
    });
  }

  onModuleDestroy(): void {
    this.subscription?.unsubscribe();
  }
}

async function loadOpenTelemetry(): Promise<OtelApi | undefined> {
  try {
    return await import('@opentelemetry/api');
  } catch {
    return undefined; // not installed: no telemetry
  }
}
