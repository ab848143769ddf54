export * from './lock.error.js';
export { InvalidArgumentError } from './invalid-argument.error.js';
export { ResourceBusyError } from './resource-busy.error.js';
export { QuorumUnreachableError } from './quorum-unreachable.error.js';
export { LockLostError, type LostReason } from './lock-lost.error.js';
export { LockAbortedError } from './lock-aborted.error.js';
export { StaleTokenError } from './stale-token.error.js';
export { ClientClosedError } from './client-closed.error.js';
export { LockKindMismatchError } from './lock-kind-mismatch.error.js';
