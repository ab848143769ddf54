/** The waiting, fencing and node-failure suites on Valkey GLIDE GlideClients (the behaviour suite: glide-behaviour.e2e-spec.ts). */
import { describeFencing } from '../suites/fencing.js';
import { describeNodeFailures } from '../suites/node-failures.js';
import { describeWaiting } from '../suites/waiting.js';
import { GLIDE } from '../support/node-kinds.js';

describeWaiting(GLIDE);
describeFencing(GLIDE);
describeNodeFailures(GLIDE);
