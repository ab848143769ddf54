/** The last position given in this process, in µs. */
let last = 0;

/**
 * A waiter's place in the queues: when its call began, in ms since the epoch with
 * µs digits. The same score on every node keeps the queues in one order (a waiter
 * first on some nodes and second on others could leave nobody with a quorum).
 *
 * Read from the wall clock, the one every process of a host shares (and NTP keeps
 * close across hosts). Not `performance.timeOrigin + performance.now()`: a process's
 * time origin can be milliseconds off from the others' (8.8 ms, seen here in one
 * process of a fault-suite run), and after a clock step every waiter of a process
 * started before it would queue ahead of, or behind, everyone else's. The wall clock
 * counts whole ms: calls of one process keep their order within a millisecond (each
 * position is at least 1 µs after the last), calls of different processes within one
 * millisecond are ordered arbitrarily. A clock stepped back by more than that is
 * followed at once, so that the process's waiters do not queue behind everyone
 * else's until the clock has caught up.
 */
export function queuePosition(): number {
  const now = Date.now() * 1000;
  last = now > last - 1000 ? Math.max(now, last + 1) : now;
  return last / 1000;
}
