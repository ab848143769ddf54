import { Injectable, type OnModuleInit } from '@nestjs/common';
import type { RedlockEvent } from './lock-events.js';
import { LockService } from './lock.service.js';
import { isLockService } from './locked.stand-in.js';

type OtelApi = typeof import('@opentelemetry/api');
type ObservableResult = import('@opentelemetry/api').ObservableResult;
type Meter = import('@opentelemetry/api').Meter;

/**
 * Metrics and spans through `@opentelemetry/api` when the application has it
 * installed (an optional peer dependency); nothing otherwise. Instruments, on
 * the `nest-redlock` meter:
 * - `redlock.acquire.duration` (histogram, ms; `outcome`: acquired | busy | failed)
 * - `redlock.held.duration` (histogram, ms)
 * - `redlock.extensions`, `redlock.extension.failures`, `redlock.skipped`,
 *   `redlock.lost` (`reason`), `redlock.node.errors` (`node`), `redlock.node.restarts` (counters)
 * - `redlock.locks.held` (gauge: locks this process holds now, per `method`)
 * - `redlock.waiters` (gauge: acquire calls of this process waiting for a busy resource)
 * and a `redlock.acquire` span per acquisition. Lock metrics carry `method`
 * (`Class.method` of the `@Locked` method, absent for other locks): bounded
 * by the application's code. No resource names (unbounded cardinality) in
 * metrics, no lock values anywhere.
 */
@Injectable()
export class RedlockTelemetry implements OnModuleInit {
  constructor(private readonly locks: LockService) {}

  async onModuleInit(): Promise<void> {
    // A test's stand-in for LockService has no events or locks to measure.
    if (!isLockService(this.locks)) return;
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
    const { attribution } = this.locks;
    const stopGauges = this.observeGauges(meter);

    type Attempted = { at: number; elapsed: number; attempts: number; resources: readonly string[] };
    const span = (event: Attempted, outcome: string, error?: string) => {
      const s = tracer.startSpan('redlock.acquire', {
        startTime: event.at - event.elapsed,
        attributes: { 'redlock.resources': event.resources.length, 'redlock.attempts': event.attempts, 'redlock.outcome': outcome },
      });
      if (error) s.setStatus({ code: api.SpanStatusCode.ERROR, message: error });
      s.end(event.at);
    };

    // Until `events$` completes, once the client closed (after every onModuleDestroy): what
    // shutdown does (locks released, a running job's lock lost at the end of the grace) counts.
    const record = (event: RedlockEvent) => {
      const method = attribution.methodOf(event);
      const by = method === undefined ? {} : { method };
      // The method's attributes and more, without a spread before them (see eslint.config.mjs).
      const attributes = (more: Record<string, string>) => (method === undefined ? more : Object.assign({ method }, more));
      switch (event.type) {
        case 'acquired':
          acquireDuration.record(event.elapsed, attributes({ outcome: 'acquired' }));
          return span(event, 'acquired');
        case 'busy':
          acquireDuration.record(event.elapsed, attributes({ outcome: 'busy' }));
          return span(event, 'busy', 'RESOURCE_BUSY');
        case 'acquire-failed':
          acquireDuration.record(event.elapsed, attributes({ outcome: 'failed', code: event.code }));
          return span(event, 'failed', event.code);
        case 'released':
          return heldDuration.record(event.heldFor, by);
        case 'extended':
          return extensions.add(1, by);
        case 'extend-failed':
          return extensionFailures.add(1, attributes({ code: event.code }));
        case 'skipped':
          return skipped.add(1, by);
        case 'lost':
          return lost.add(1, attributes({ reason: event.reason }));
        case 'node-error':
          return nodeErrors.add(1, { node: event.node });
        case 'node-restarted':
          return nodeRestarts.add(1, { node: event.node });
      }
    };
    this.locks.events$.subscribe({ next: record, complete: stopGauges });
  }

  /** The gauges, read at each collection; returns what removes their callbacks. */
  private observeGauges(meter: Meter): () => void {
    const { attribution, client } = this.locks;
    const held = meter.createObservableGauge('redlock.locks.held', { description: 'Locks this process holds now' });
    const waiters = meter.createObservableGauge('redlock.waiters', {
      description: 'Acquire calls of this process waiting for a busy resource',
    });
    const observeHeld = (result: ObservableResult) => {
      for (const [method, n] of attribution.heldByMethod(client.stats.held)) result.observe(n, method === undefined ? {} : { method });
    };
    const observeWaiters = (result: ObservableResult) => result.observe(client.stats.waiting);
    held.addCallback(observeHeld);
    waiters.addCallback(observeWaiters);
    // The meter outlives this module (a global provider): its callbacks must not read a closed client.
    return () => {
      held.removeCallback(observeHeld);
      waiters.removeCallback(observeWaiters);
    };
  }
}

async function loadOpenTelemetry(): Promise<OtelApi | undefined> {
  try {
    return await import('@opentelemetry/api');
  } catch {
    return undefined; // not installed: no telemetry
  }
}
