import { describeNodeFailures } from '../suites/node-failures.js';
import { IOREDIS_OTHER_COPY, IOREDIS_URLS } from '../support/node-kinds.js';

describeNodeFailures(IOREDIS_URLS);
// The application's own ioredis, another copy than the library's (issue 18.14): the adapter tells its clients by shape.
describeNodeFailures(IOREDIS_OTHER_COPY);
