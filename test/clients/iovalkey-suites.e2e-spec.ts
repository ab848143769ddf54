/** The waiting, fencing and node-failure suites on iovalkey clients (the behaviour suite: test/core/iovalkey.e2e-spec.ts). */
import { describeFencing } from '../suites/fencing.js';
import { describeNodeFailures } from '../suites/node-failures.js';
import { describeWaiting } from '../suites/waiting.js';
import { IOVALKEY } from '../support/node-kinds.js';

describeWaiting(IOVALKEY);
describeFencing(IOVALKEY);
describeNodeFailures(IOVALKEY);
