/**
 * The per-node timeout of test clients whose tests are not about timeouts. On a
 * loaded test machine the default (derived from the ttl: 50 ms for a 5 s lock)
 * turns a node that is briefly descheduled into a timed-out answer, and with
 * `retryCount: 0` into a failure of something the test does not test. Tests
 * about hung or slow nodes set their own.
 */
export const TEST_NODE_TIMEOUT = 250;
