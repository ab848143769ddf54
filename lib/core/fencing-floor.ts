/**
 * The fencing floor a semaphore permit's release sends for its hand-over's token (see GRANT): this
 * clock in µs, one value for every node. In µs, not whole ms as an attempt's floor
 * (`Date.now() * 1000`): the grants and attempts of the same millisecond raised the
 * counters to that ms's floor and a little above, in each node's own order, and a
 * floor below them would leave each node announcing its own `counter + 1`.
 *
 * The µs come from `performance.timeOrigin + performance.now()`, which can be off
 * from the wall clock by milliseconds in some processes (see queuePosition): never
 * below the wall clock here, so that a floor is no lower than an attempt's of the
 * same moment. Nothing orders floors across processes; only the counters do.
 */
export function handOverFloor(): number {
  return Math.max(Date.now() * 1000, Math.floor((performance.timeOrigin + performance.now()) * 1000));
}
