export { RedlockHealthIndicator } from './redlock-health.indicator.js';
export { RedlockHealthModule } from './redlock-health.module.js';
export type { RedlockHealthDetails, RedlockHealthOptions, RedlockHealthResult, RedlockNodeDetails } from './redlock-health.interface.js';
export type { NodeHealth } from '../core/index.js';
