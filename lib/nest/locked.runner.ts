import { BadRequestException } from '@nestjs/common';
import { defer, from, isObservable, mergeMap, Observable, of, throwError, type Subscriber, type Subscription } from 'rxjs';
import { InvalidArgumentError, ResourceBusyError, type Lock } from '../core/index.js';
import { validateResources } from '../core/layers.js';
import { heldInScope, heldLocks, isThenable, requestFor, runNested, withLock, withLocks, type Reentry } from './lock-context.js';
import { afterPipes, resolveKey, type LockKeyContext, type RouteArgs } from './lock-key.js';
import { resolveBusy, type ResolvedBusy } from './busy.js';
import type { LockedMetadata } from './locked.metadata.js';
import { postpone, queueJobOf } from './queue-job.js';
import type { RedlockModuleOptions } from './redlock-module-options.interface.js';
import { cronOptionsOf, tickOf, type Tick } from './schedule-tick.js';
import { transportError } from './transport-errors.js';
import { isEventHandler, isMessageHandler } from './message-handlers.js';

/** Where Nest records a handler's parameter decorators (`ROUTE_ARGS_METADATA`, not exported by `@nestjs/common`'s index). */
const ROUTE_ARGS_METADATA = '__routeArguments__';

/** What the road needs from `LockService`. */
export interface LockTaker {
  /** Writes a warning to the module's logger. */
  warn(message: string): void;
  take(resources: readonly string[], metadata: LockedMetadata, busy: ResolvedBusy): Promise<Lock | null>;
  /** Ends the call's lock; `keepUntil` (epoch ms) leaves its keys until then (a `{tick}` key, until the next tick). */
  settle(lock: Lock, metadata: LockedMetadata, keepUntil?: number): void;
}

/**
 * One call of a `@Locked` method, whoever calls it. The key is built from the
 * arguments the method receives (after pipes, for a controller handler), the
 * instance, and, for a controller, the request the interceptor put in scope
 * (for a queue processor, the job; for a cron method, the tick). Then:
 * - a controller handler, or a method declared to return an Observable, gets
 *   a cold Observable: the lock is taken on subscription and held until the
 *   result (value, promise or stream) completes, errors or is unsubscribed;
 * - any other method gets a Promise: the lock is held until its result settles.
 */
export function runLocked(
  taker: LockTaker,
  options: RedlockModuleOptions,
  metadata: LockedMetadata,
  self: object,
  args: unknown[],
  original: (...args: unknown[]) => unknown,
): unknown {
  const request = requestFor(metadata);
  const outer = heldLocks();
  const call = () => original.apply(self, args);
  if (request) {
    // An event (`@EventPattern`) answers no caller: busy, it is skipped as a provider method is
    // (`methodBusy`), where an error would only be logged with its stack by the exception filter.
    const event = request.type === 'rpc' && isEventHandler((self as Record<string | symbol, unknown>)[metadata.propertyKey]);
    const busy = event
      ? resolveBusy('method', options.methodBusy, metadata.options.busy)
      : resolveBusy('controller', options.controllerBusy, metadata.options.busy);
    let resources: readonly string[];
    try {
      const routeArgs = Reflect.getMetadata(ROUTE_ARGS_METADATA, self.constructor, metadata.propertyKey) as RouteArgs | undefined;
      resources = validateResources(resolveKey(metadata.key, afterPipes(request.type, request.request, args, routeArgs, self)));
    } catch (error) {
      // A key the request cannot fill is the request's fault.
      if (error instanceof InvalidArgumentError && request.type === 'http') {
        throw new BadRequestException(error.message, { cause: error });
      }
      throw error;
    }
    const locked: LockedCall = { taker, metadata, resources, busy, outer, call, args, type: request.type };
    return runLocking(locked, (error) => busyError(locked, error) ?? transportError(request.type, options, busy, error));
  }
  warnIfUnintercepted(taker, metadata, self);
  const job = queueJobOf(metadata, self, args);
  let resources: readonly string[];
  let tick: () => { next: number } | undefined;
  try {
    const made = methodContext(metadata, self, args, original, job?.job);
    tick = made.tick;
    resources = validateResources(resolveKey(metadata.key, made.context));
  } catch (error) {
    return failedCall(metadata, error);
  }
  const busy = job
    ? resolveBusy('job', options.jobBusy, metadata.options.busy)
    : resolveBusy('method', options.methodBusy, metadata.options.busy);
  const locked: LockedCall = {
    taker,
    metadata,
    resources,
    busy,
    outer,
    call,
    args,
    type: job ? 'job' : 'method',
    keepUntil: tick()?.next,
    whenSkipped: job ? () => postpone(job.job, job.token, busy) : undefined,
  };
  return runLocking(locked, metadata.returnsObservable ? (error) => busyError(locked, error) ?? error : undefined);
}

/** The `@Locked` message handlers already warned of running without the module's interceptor. */
const warnedUnintercepted = new WeakSet<LockedMetadata>();

/**
 * A message handler called with no request in scope ran without the module's
 * interceptor: in a hybrid application, a microservice connected without
 * `inheritAppConfig` gets none of the application's global interceptors. Its
 * call is then a provider method's, which no error would tell: said once.
 * (A call from the application's own code, a unit test's, meets this too.)
 */
function warnIfUnintercepted(taker: LockTaker, metadata: LockedMetadata, self: object): void {
  if (warnedUnintercepted.has(metadata)) return;
  const method = (self as Record<string | symbol, unknown>)[metadata.propertyKey];
  if (!isMessageHandler(method)) return;
  warnedUnintercepted.add(metadata);
  taker.warn(
    `@Locked ${metadata.method} handles messages but ran without RedlockModule's interceptor: its key cannot read the message ({data...}), and when busy it is skipped as a provider method is (an RPC caller gets an empty reply). In a hybrid application, connect the microservice with app.connectMicroservice(options, { inheritAppConfig: true }). A direct call from your own code may ignore this.`,
  );
}

/**
 * A call that failed before it began, as the method's callers take its
 * failures: a rejected promise (or a failing Observable), never a throw
 * `.catch()` would not see.
 */
export function failedCall(metadata: LockedMetadata, error: unknown): unknown {
  return metadata.returnsObservable ? throwError(() => error) : Promise.reject(error);
}

/**
 * Runs the call under a lock of its own, as a cold Observable (`mapError`
 * given: what a failure becomes) or a Promise. A call on resources this call
 * chain holds already runs under the chain's lock, or fails at once where that
 * lock is of another kind (see `heldInScope`).
 */
function runLocking(locked: LockedCall, mapError?: (error: unknown) => unknown): unknown {
  const { limit, mode } = locked.metadata.options;
  const reentry = (): Reentry | undefined => heldInScope(locked.resources, locked.outer, { limit, mode });
  if (!mapError) {
    let held: Reentry | undefined;
    try {
      held = reentry();
    } catch (error) {
      return Promise.reject(error);
    }
    return held ? runNested(held, locked.call) : lockedPromise(locked);
  }
  // A stream runs when subscribed, so the chain's lock is looked for then: made under a holder and
  // subscribed once the holder's call ended, it would otherwise run under a lock on its way out.
  return defer(() => {
    let held: Reentry | undefined;
    try {
      held = reentry();
    } catch (error) {
      return throwError(() => mapError(error));
    }
    if (!held) return lockedStream(locked, mapError);
    const result = withLocks(locked.outer, () => runNested(held, locked.call));
    return isObservable(result) || isThenable(result) ? result : of(result);
  });
}

/**
 * The key context of a call that is not a controller's: the arguments, the
 * instance, the job, and the cron tick, computed only when the key reads it
 * (`tick()` then tells it, so the lock is kept until the next tick).
 */
function methodContext(
  metadata: LockedMetadata,
  self: object,
  args: unknown[],
  original: (...args: unknown[]) => unknown,
  job: LockKeyContext['job'],
): { context: LockKeyContext; tick: () => Tick | undefined } {
  const now = Date.now(); // the scheduler calls the method as it fires
  let tick: Tick | undefined;
  const context = {
    args,
    self,
    job,
    get tick(): number | undefined {
      const cron = cronOptionsOf(original, (self as Record<string | symbol, unknown>)[metadata.propertyKey]);
      if (!cron) return undefined;
      tick ??= tickOf(cron, now);
      return tick.at;
    },
  };
  return { context, tick: () => tick };
}

/** One call to run under its lock: who takes it, on what, how busy is handled, the locks already held, and the method call. */
interface LockedCall {
  readonly taker: LockTaker;
  readonly metadata: LockedMetadata;
  readonly resources: readonly string[];
  readonly busy: ResolvedBusy;
  readonly outer: readonly Lock[];
  readonly call: () => unknown;
  readonly args: readonly unknown[];
  /** `http`, `rpc`, `ws`, `graphql`, `job` or `method`: for the busy hook. */
  readonly type: string;
  /** Keep the keys until then after the run (epoch ms). */
  readonly keepUntil?: number;
  /** What a skipped call returns instead of `undefined` (a queue job: moved back to delayed). */
  readonly whenSkipped?: () => Promise<unknown>;
}

/** The caller's own busy error (`busy.exception`), if this is a busy error and one was given. */
function busyError({ busy, metadata, resources, args, type }: LockedCall, error: unknown): unknown {
  if (!(error instanceof ResourceBusyError) || !busy.exception) return undefined;
  return busy.exception({ method: metadata.method, resources, type, args, error });
}

async function lockedPromise(locked: LockedCall): Promise<unknown> {
  const { taker, metadata, outer, call } = locked;
  let lock: Lock | null;
  try {
    lock = await taker.take(locked.resources, metadata, locked.busy);
  } catch (error) {
    throw busyError(locked, error) ?? error;
  }
  if (!lock) return locked.whenSkipped?.();
  try {
    const result = withLock(lock, call, outer);
    if (isObservable(result)) {
      // Awaiting it would release the lock before anyone subscribed.
      throw new TypeError(
        `@Locked ${metadata.method} returned an Observable but is not declared to: declare its return type ` +
          '(`: Observable<T>`) so that the lock is held from subscription to completion',
      );
    }
    return await result;
  } finally {
    taker.settle(lock, metadata, locked.keepUntil);
  }
}

function lockedStream(locked: LockedCall, mapError: (error: unknown) => unknown): Observable<unknown> {
  const { taker, metadata, resources, busy, outer } = locked;
  return new Observable<unknown>((subscriber) => {
    const run = new StreamRun(locked, subscriber);
    taker.take(resources, metadata, busy).then(
      (taken) => {
        run.lock = taken;
        if (!taken) return subscriber.complete(); // busy and skipped
        if (subscriber.closed) return run.settle(); // the subscriber went away while we waited
        run.inner = withLock(taken, () => run.body(), outer);
        if (subscriber.closed) run.inner?.unsubscribe();
      },
      (error: unknown) => subscriber.error(mapError(error)),
    );
    return () => run.leave();
  });
}

/** One subscription's run of a locked call: its lock, its body, and when the lock may go. */
class StreamRun {
  lock: Lock | null = null;
  inner: Subscription | undefined;
  private settled = false;
  /** The body's promise (or thenable: a query builder): it runs on when its subscriber leaves, and keeps the lock until it settles. */
  private running: Promise<unknown> | undefined;
  /** While the body's synchronous part runs, a subscriber that leaves is seen once it returned. */
  private inBody = false;
  private leftInBody = false;

  constructor(
    private readonly locked: LockedCall,
    private readonly subscriber: Subscriber<unknown>,
  ) {}

  settle(): void {
    if (this.settled || !this.lock) return;
    this.settled = true;
    this.locked.taker.settle(this.lock, this.locked.metadata, this.locked.keepUntil);
  }

  /**
   * Unsubscribed (a client that went away, a timeout interceptor): an Observable
   * body stops, so its lock goes; a promise cannot be stopped, and releasing under it
   * would let another call on the resource run beside it.
   */
  leave(): void {
    this.inner?.unsubscribe();
    if (this.inBody) this.leftInBody = true;
    else if (this.running) void this.running.then(this.settle.bind(this), this.settle.bind(this));
    else this.settle();
  }

  /** Runs the body under the lock and relays what it gives. */
  body(): Subscription | undefined {
    const { subscriber } = this;
    let result: unknown;
    this.inBody = true;
    try {
      result = this.locked.call();
    } catch (error) {
      this.settle();
      subscriber.error(error);
      return undefined;
    } finally {
      this.inBody = false;
    }
    if (isThenable(result)) this.running = Promise.resolve(result);
    if (this.leftInBody) return void this.leave();
    // A promise of an Observable (an async handler's stream) is the stream: Nest flattens it too.
    const source = isObservable(result)
      ? result
      : this.running
        ? from(this.running).pipe(mergeMap((value) => (isObservable(value) ? value : of(value))))
        : of(result);
    return source.subscribe({
      next: (value) => subscriber.next(value),
      error: (error: unknown) => {
        this.settle();
        subscriber.error(error);
      },
      complete: () => {
        this.settle();
        subscriber.complete();
      },
    });
  }
}
