import type { NodeHealth } from '../core/index.js';

/** Per-call settings of `RedlockHealthIndicator.isHealthy`. */
export interface RedlockHealthOptions {
  /**
   * Longest wait for the nodes' PING answers, ms; a node silent for longer is
   * down. Default: the client's per-node timeout for its default ttl.
   */
  readonly timeout?: number;
}

/** One node in the details: `status`, `latencyMs`, and `error` when down. */
export type RedlockNodeDetails = Omit<NodeHealth, 'node'>;

/** What the indicator reports under its key (terminus `HealthIndicatorResult` shape). */
export type RedlockHealthDetails = {
  /** `up` while at least `quorum` nodes answered and count. */
  status: 'up' | 'down';
  /** Nodes needed for a lock: floor(N/2)+1. */
  quorum: number;
  /** Nodes that answered in time and count. */
  up: number;
  /** Nodes configured. */
  total: number;
  /** Each node by its `host:port/db` label (never credentials). */
  nodes: Record<string, RedlockNodeDetails>;
  /** Why the check is down. */
  message?: string;
};

/** `{ [key]: RedlockHealthDetails }`, assignable to terminus's `HealthIndicatorResult`. */
export type RedlockHealthResult<Key extends string = string> = Record<Key, RedlockHealthDetails>;
