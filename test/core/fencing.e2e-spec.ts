import { describeFencing } from '../suites/fencing.js';
import { IOREDIS_URLS } from '../support/node-kinds.js';

describeFencing(IOREDIS_URLS);
