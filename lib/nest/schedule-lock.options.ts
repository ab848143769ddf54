import { checkKnown, checkTtl } from '../core/layers.js';
import { InvalidArgumentError } from '../core/index.js';

/**
 * The module option `schedule`: every `@Cron`, `@Interval` and `@Timeout`
 * method of the application runs under a lock named after its class and
 * method, and is skipped when another instance holds it.
 */
export interface ScheduleLockOptions {
  /** Lock ttl of each run, ms (extended while the run lasts). Default: the client's `ttl`. */
  readonly ttl?: number;
  /** Keep each run's lock at least this long after it started, ms (see `@Locked`'s `lockAtLeastFor`). */
  readonly lockAtLeastFor?: number;
  /** Prefix of the keys: `'<prefix><Class>.<method>'`. Default `'schedule:'`. */
  readonly prefix?: string;
  /**
   * `@Cron` methods lock each tick on its own key (`'<prefix><Class>.<method>:{tick}'`),
   * kept until the next tick: exactly one run per tick, even on a replica late
   * by less than a period, and no `lockAtLeastFor` to guess. Runs of two ticks
   * do not exclude each other then: a run longer than its period overlaps the
   * next one. Default false.
   */
  readonly perTick?: boolean;
}

const SCHEDULE_KEYS: ReadonlySet<string> = new Set<keyof ScheduleLockOptions>(['ttl', 'lockAtLeastFor', 'prefix', 'perTick']);

/** Checked at bootstrap, with the other module options. */
export function checkScheduleOptions(schedule: unknown): void {
  if (schedule === undefined || typeof schedule === 'boolean') return;
  if (typeof schedule !== 'object' || schedule === null) {
    throw new InvalidArgumentError('schedule', 'true, false or an object ({ ttl, lockAtLeastFor, prefix, perTick })', schedule);
  }
  checkKnown('schedule', schedule, SCHEDULE_KEYS);
  const { ttl, lockAtLeastFor, prefix, perTick } = schedule as ScheduleLockOptions;
  if (ttl !== undefined) checkTtl(ttl, 'schedule.ttl');
  if (lockAtLeastFor !== undefined) checkTtl(lockAtLeastFor, 'schedule.lockAtLeastFor');
  if (prefix !== undefined && typeof prefix !== 'string') throw new InvalidArgumentError('schedule.prefix', 'a string', prefix);
  if (perTick !== undefined && typeof perTick !== 'boolean') throw new InvalidArgumentError('schedule.perTick', 'a boolean', perTick);
}
