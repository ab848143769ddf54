import { InvalidArgumentError } from './errors/invalid-argument.error.js';
import type { LockEventListener } from './events.js';
import type { HolderIdentity } from './holder.js';
import type { NodeSpec } from './node.js';

/** Longest ttl Redis accepts for `PX` without overflowing its expire time. */
export const MAX_TTL = 2 ** 46;

/**
 * Longest delay Node's timers keep: a longer one fires after 1 ms. Delays
 * (retries, timeouts, grace periods) are bounded by it; the timers of a lock
 * whose ttl is longer are re-armed in steps of at most this.
 */
export const MAX_DELAY = 2 ** 31 - 1;

/** How an acquisition retries while the resource is busy. */
export interface RetryOptions {
  /** Retries after the first attempt; 0 = try once. Default 10. */
  readonly retryCount?: number;
  /** Base delay between attempts, ms. Default 200. */
  readonly retryDelay?: number;
  /** Random extra delay added to each wait, uniform in [0, retryJitter) ms. Default 100. */
  readonly retryJitter?: number;
  /** Upper bound for the whole acquisition, all attempts and waits included, ms. Default: none. */
  readonly acquireTimeout?: number;
}

export interface RedlockOptions extends RetryOptions {
  /**
   * The independent nodes (N >= 1; quorum floor(N/2)+1): ioredis clients
   * (left open by `close()`), URLs or ioredis options (opened and closed here).
   */
  readonly nodes: readonly NodeSpec[];
  /** Namespace of every key this client writes. Default `'redlock:'`. */
  readonly prefix?: string;
  /** Ttl used when `acquire` gets none, ms. Default 10 000. */
  readonly ttl?: number;
  /** Clock drift allowance as a fraction of the ttl, in [0, 1). Default 0.01. */
  readonly driftFactor?: number;
  /** Per-node timeout, ms. Default: derived from the ttl (1% of it, within 50-250 ms and at most ttl/4). */
  readonly nodeTimeout?: number;
  /**
   * Fencing tokens: `true` (default) gives every lock a token that grows across
   * acquisitions of its resources; `false` turns the counters off.
   */
  readonly fencing?: boolean;
  /**
   * How long an unused resource's fencing counter is kept, ms. Default 24 hours:
   * tokens stay ordered across a counter's expiry while no client's clock is
   * ahead of another's by more than this (README, "Fencing tokens").
   */
  readonly fencingRetention?: number;
  /** Automatic extension, for `using` and `autoExtend` locks. */
  readonly autoExtend?: AutoExtendOptions;
  /**
   * Restart guard: a node that restarted less than this long ago is not counted
   * in quorums, since it may have lost keys. `'auto'` (the default): restarts
   * this client sees (a new run id on a reconnect) keep the node out for the
   * longest ttl this client has used (`ttl` before its first lock); a number, ms: also a
   * node found younger than that at the first connection; `0`: off, for nodes
   * that persist with `appendfsync always`. See the README's "Safety: what Redlock guarantees, and what it does not".
   */
  readonly restartGuard?: number | 'auto';
  /**
   * Fair waiting (default true): callers that wait for a busy resource queue on
   * the nodes by the time of their first attempt, a freed resource is reserved
   * for the first of them, and releases wake it through pub/sub instead of
   * polling (polling stays as the fallback). `false`: plain jittered polling.
   */
  readonly fairWaiting?: boolean;
  /**
   * Record who holds each lock, for `inspect` and the CLI: `true` records this
   * host and pid; an object records what it says (`app`, `host`, `pid`).
   * Carried inside the lock value; default: nothing recorded.
   */
  readonly identity?: HolderIdentity | boolean;
  /** Receives every lock event; errors thrown by it are ignored. */
  readonly onEvent?: LockEventListener;
  /**
   * How long `close()` waits for locks still held (running `using` routines,
   * `@Locked` methods, locks not yet released) before it marks them lost and
   * deletes their keys, ms. Default 10 000.
   */
  readonly shutdownGrace?: number;
}

export interface AutoExtendOptions {
  /** Extend when this fraction of the ttl remains, in (0, 1). Default 0.5. */
  readonly threshold?: number;
  /** Most extensions per lock; `Infinity` for no bound. Default `Infinity`. */
  readonly maxExtensions?: number;
}

/** Per-call settings of `acquire`. */
export interface AcquireOptions extends RetryOptions {
  /** Per-node timeout for this call, ms. */
  readonly nodeTimeout?: number;
  /** Stops waiting and retrying; nothing is left on the nodes. */
  readonly signal?: AbortSignal;
  /** Keep the lock alive until it is released (see `AutoExtendOptions`). Default false. */
  readonly autoExtend?: boolean;
  /**
   * A semaphore: at most `limit` holders of the resource at once (1 to
   * {@link MAX_LIMIT}), each with a permit of its own. One resource per call; every
   * caller of a resource must give the same limit.
   */
  readonly limit?: number;
  /** A read-write lock: any number of `'read'` holders, or one `'write'` holder. One resource per call. */
  readonly mode?: 'read' | 'write';
}

/**
 * Most holders a semaphore admits: each permit is one of its slots, and `inspect`,
 * `list` and `forceRelease` read every slot's key on a node in one script.
 */
export const MAX_LIMIT = 1000;

/** Options after defaults, as the client uses them. */
export interface ResolvedOptions {
  readonly prefix: string;
  readonly ttl: number;
  readonly driftFactor: number;
  readonly retryCount: number;
  readonly retryDelay: number;
  readonly retryJitter: number;
  readonly acquireTimeout: number | undefined;
  readonly nodeTimeout: number | undefined;
  readonly fencingRetention: number;
  readonly threshold: number;
  readonly maxExtensions: number;
  readonly restartGuard: number | 'auto';
  readonly fairWaiting: boolean;
  readonly shutdownGrace: number;
}

export const DEFAULTS = Object.freeze({
  prefix: 'redlock:',
  ttl: 10_000,
  driftFactor: 0.01,
  retryCount: 10,
  retryDelay: 200,
  retryJitter: 100,
  // 24 hours: covers whole-hour clock errors (a hardware clock read in the wrong
  // time zone is off by up to 14 h) at a seventh of the 7 days' footprint.
  fencingRetention: 24 * 3600 * 1000,
  threshold: 0.5,
  maxExtensions: Infinity,
  shutdownGrace: 10_000,
});

export function checkTtl(value: unknown, name = 'ttl'): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_TTL) {
    throw new InvalidArgumentError(name, `a positive integer number of milliseconds up to ${MAX_TTL}`, value);
  }
  return value;
}

/** A delay for a timer, ms: an integer from `min` to `MAX_DELAY`. */
export function checkDelay(value: unknown, name: string, min = 1): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > MAX_DELAY) {
    const expected = min === 1 ? 'a positive integer number of milliseconds' : `an integer number of milliseconds from ${min}`;
    throw new InvalidArgumentError(name, `${expected} up to ${MAX_DELAY}`, value);
  }
  return value;
}

function integerIn(name: string, value: unknown, min: number, max: number, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new InvalidArgumentError(name, `an integer from ${min} to ${max}`, value);
  }
  return value;
}

function booleanOr(name: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') throw new InvalidArgumentError(name, 'a boolean', value);
  return value;
}

function optionalTimeout(name: string, value: unknown): number | undefined {
  return value === undefined ? undefined : checkDelay(value, name);
}

/** Checks the per-call options of `acquire` that `resolveRetry` does not cover. */
export function checkAcquireOptions(options: unknown): AcquireOptions {
  if (options === undefined) return {};
  if (typeof options !== 'object' || options === null) {
    throw new InvalidArgumentError('acquire options', 'an object or undefined', options);
  }
  checkKnown('acquire options', options, ACQUIRE_KEYS);
  const { signal, autoExtend, nodeTimeout, limit, mode } = options as AcquireOptions;
  if (limit !== undefined) integerIn('limit', limit, 1, MAX_LIMIT, 1);
  if (mode !== undefined && mode !== 'read' && mode !== 'write') throw new InvalidArgumentError('mode', "'read' or 'write'", mode);
  if (limit !== undefined && mode !== undefined)
    throw new InvalidArgumentError('mode', 'no mode beside a limit (a semaphore or a read-write lock, not both)', mode);
  if (signal !== undefined && !isAbortSignal(signal)) throw new InvalidArgumentError('signal', 'an AbortSignal', signal);
  booleanOr('autoExtend', autoExtend, false);
  optionalTimeout('nodeTimeout', nodeTimeout);
  return options as AcquireOptions;
}

function isAbortSignal(value: unknown): boolean {
  const s = value as Partial<AbortSignal> | null;
  return typeof s === 'object' && s !== null && typeof s.aborted === 'boolean' && typeof s.addEventListener === 'function';
}

/** Retry settings of one call, falling back to the client's. */
export function resolveRetry(options: RetryOptions, base: RetryOptions & { retryCount: number; retryDelay: number; retryJitter: number }) {
  return {
    retryCount: integerIn('retryCount', options.retryCount, 0, 1_000_000, base.retryCount),
    retryDelay: integerIn('retryDelay', options.retryDelay, 0, MAX_DELAY, base.retryDelay),
    retryJitter: integerIn('retryJitter', options.retryJitter, 0, MAX_DELAY, base.retryJitter),
    acquireTimeout: optionalTimeout('acquireTimeout', options.acquireTimeout) ?? base.acquireTimeout,
  };
}

const RETRY_KEYS = ['retryCount', 'retryDelay', 'retryJitter', 'acquireTimeout'] as const;
const CLIENT_KEYS: ReadonlySet<string> = new Set<keyof RedlockOptions>([
  ...RETRY_KEYS,
  'nodes',
  'prefix',
  'ttl',
  'driftFactor',
  'nodeTimeout',
  'fencing',
  'fencingRetention',
  'autoExtend',
  'restartGuard',
  'fairWaiting',
  'identity',
  'onEvent',
  'shutdownGrace',
]);
const ACQUIRE_KEYS: ReadonlySet<string> = new Set<keyof AcquireOptions>([
  ...RETRY_KEYS,
  'nodeTimeout',
  'signal',
  'autoExtend',
  'limit',
  'mode',
]);
const AUTO_EXTEND_KEYS: ReadonlySet<string> = new Set<keyof AutoExtendOptions>(['threshold', 'maxExtensions']);

/** A misspelt option would otherwise be ignored in silence, its default used instead. */
export function checkKnown(name: string, options: object, known: ReadonlySet<string>): void {
  for (const key of Object.keys(options)) {
    if (!known.has(key)) {
      throw new InvalidArgumentError(`${name}.${key}`, `one of the known options (${[...known].join(', ')})`, key);
    }
  }
}

function checkRestartGuard(value: unknown): number | 'auto' {
  if (value === undefined || value === 'auto') return 'auto';
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > MAX_DELAY) {
    throw new InvalidArgumentError('restartGuard', `'auto', or an integer number of milliseconds from 0 (off) to ${MAX_DELAY}`, value);
  }
  return value;
}

/** Validates the client's options once, at construction. */
export function resolveOptions(options: RedlockOptions): ResolvedOptions {
  if (typeof options !== 'object' || options === null) {
    throw new InvalidArgumentError('options', 'an object with a `nodes` array', options);
  }
  checkKnown('options', options, CLIENT_KEYS);
  if (options.autoExtend !== undefined && (typeof options.autoExtend !== 'object' || options.autoExtend === null)) {
    throw new InvalidArgumentError('autoExtend', 'an object ({ threshold?, maxExtensions? })', options.autoExtend);
  }
  if (options.autoExtend) checkKnown('autoExtend', options.autoExtend, AUTO_EXTEND_KEYS);
  const prefix = options.prefix ?? DEFAULTS.prefix;
  if (typeof prefix !== 'string' || prefix.length > 256) {
    throw new InvalidArgumentError('prefix', 'a string of at most 256 characters', prefix);
  }
  const driftFactor = options.driftFactor ?? DEFAULTS.driftFactor;
  if (typeof driftFactor !== 'number' || !(driftFactor >= 0 && driftFactor < 1)) {
    throw new InvalidArgumentError('driftFactor', 'a number in [0, 1)', driftFactor);
  }
  const auto = options.autoExtend ?? {};
  const threshold = auto.threshold ?? DEFAULTS.threshold;
  // At or above 1 - driftFactor the lock's validity would already be inside the
  // threshold right after an extension: it would extend again at once, forever.
  if (typeof threshold !== 'number' || !(threshold > 0 && threshold < 1 - driftFactor)) {
    throw new InvalidArgumentError('autoExtend.threshold', `a number in (0, ${1 - driftFactor}) (below 1 - driftFactor)`, threshold);
  }
  const maxExtensions = auto.maxExtensions ?? DEFAULTS.maxExtensions;
  if (typeof maxExtensions !== 'number' || !(maxExtensions === Infinity || (Number.isInteger(maxExtensions) && maxExtensions >= 0))) {
    throw new InvalidArgumentError('autoExtend.maxExtensions', 'a non-negative integer or Infinity', maxExtensions);
  }
  booleanOr('fencing', options.fencing, true);
  if (options.onEvent !== undefined && typeof options.onEvent !== 'function') {
    throw new InvalidArgumentError('onEvent', 'a function', options.onEvent);
  }
  const retry = resolveRetry(options, { ...DEFAULTS, acquireTimeout: undefined });
  return {
    prefix,
    ttl: options.ttl === undefined ? DEFAULTS.ttl : checkTtl(options.ttl),
    driftFactor,
    ...retry,
    nodeTimeout: optionalTimeout('nodeTimeout', options.nodeTimeout),
    fencingRetention:
      options.fencing === false
        ? 0
        : options.fencingRetention === undefined
          ? DEFAULTS.fencingRetention
          : checkTtl(options.fencingRetention, 'fencingRetention'),
    threshold,
    maxExtensions,
    restartGuard: checkRestartGuard(options.restartGuard),
    fairWaiting: booleanOr('fairWaiting', options.fairWaiting, true),
    shutdownGrace: integerIn('shutdownGrace', options.shutdownGrace, 0, MAX_DELAY, DEFAULTS.shutdownGrace),
  };
}
