import { describeWaiting } from '../suites/waiting.js';
import { IOREDIS_URLS } from '../support/node-kinds.js';

describeWaiting(IOREDIS_URLS);
