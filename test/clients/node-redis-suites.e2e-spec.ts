/**
 * The waiting, fencing and node-failure suites on node-redis clients, once per
 * version and protocol (the behaviour suite: node-redis.e2e-spec.ts).
 */
import { describeFencing } from '../suites/fencing.js';
import { describeNodeFailures } from '../suites/node-failures.js';
import { describeWaiting } from '../suites/waiting.js';
import { NODE_REDIS_KINDS } from '../support/node-kinds.js';

for (const kind of NODE_REDIS_KINDS) {
  describeWaiting(kind);
  describeFencing(kind);
  describeNodeFailures(kind);
}
