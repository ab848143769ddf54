export { Redlock } from './redlock.js';
export { Lock } from './lock.js';
export type { NodeSpec, RedisClient } from './node.js';
export type { RedlockOptions, AcquireOptions, RetryOptions, AutoExtendOptions } from './options.js';
export { MAX_TTL } from './options.js';
export { MAX_RESOURCE_LENGTH } from './keys.js';
export type * from './events.js';
export type { AttemptReport, NodeReport, NodeOutcome } from './outcome.js';
export * from './errors/index.js';
