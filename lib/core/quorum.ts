import { MAX_DELAY } from './options.js';
/** Votes needed out of `n` nodes: a strict majority. */
export function quorumOf(n: number): number {
  return Math.floor(n / 2) + 1;
}

/**
 * Clock drift allowed for a lock of `ttl` ms: Redis expires keys with ~1 ms
 * precision, and clocks of processes and nodes run at slightly different rates.
 */
export function driftOf(ttl: number, driftFactor: number): number {
  return Math.floor(ttl * driftFactor) + 2;
}

/** Milliseconds the lock is still safe to rely on after a round that took `elapsed` ms. */
export function validityOf(ttl: number, elapsed: number, driftFactor: number): number {
  return ttl - elapsed - driftOf(ttl, driftFactor);
}

/**
 * Default per-node timeout for a lock of `ttl` ms: 1% of the ttl, within
 * 50-250 ms and at most a quarter of the ttl. Small against the ttl, but not
 * below what a loaded Node process needs to see an answer; a slow minority
 * never delays a round anyway, since rounds are decided at quorum.
 */
export function defaultNodeTimeout(ttl: number): number {
  return Math.max(1, Math.min(250, Math.max(50, Math.round(ttl / 100)), Math.floor(ttl / 4)));
}

/** Delay before retry: `delay` plus a uniform random jitter in [0, jitter). */
export function retryDelayOf(delay: number, jitter: number): number {
  return Math.min(MAX_DELAY, delay + Math.floor(Math.random() * jitter));
}
