/** `@nestjs/schedule` keeps a `@Cron` method's options under this key, on the method function. */
const SCHEDULE_CRON_OPTIONS = 'SCHEDULE_CRON_OPTIONS';

/** What `{tick}` needs of a `@Cron` method's options. */
interface CronOptions {
  readonly cronTime: unknown;
  readonly timeZone?: string;
  readonly utcOffset?: number;
}

/** The part of the `cron` package's `CronTime` used here (cron is @nestjs/schedule's own dependency). */
interface CronTimeLike {
  readonly timeZone?: string;
  getNextDateFrom(start: Date, timeZone?: string): { toMillis(): number };
}
type CronTimeClass = new (source: unknown, timeZone?: string | null, utcOffset?: number | null) => CronTimeLike;

let CronTime: CronTimeClass | undefined;
const times = new WeakMap<object, CronTimeLike>();

/** Loads `cron` once, at bootstrap, so that a tick is computed without waiting; false when it is not installed. */
export async function loadCron(): Promise<boolean> {
  if (CronTime) return true;
  try {
    CronTime = (await import('cron')).CronTime as unknown as CronTimeClass;
    return true;
  } catch {
    return false;
  }
}

/** The `@Cron` options of a method, read from any of the functions that carry its metadata. */
export function cronOptionsOf(...methods: unknown[]): CronOptions | undefined {
  for (const method of methods) {
    if (typeof method !== 'function') continue;
    const options = Reflect.getMetadata(SCHEDULE_CRON_OPTIONS, method) as CronOptions | undefined;
    if (options) return options;
  }
  return undefined;
}

/** One run's tick: when the scheduler was due to fire it, and when it fires next (epoch ms). */
export interface Tick {
  readonly at: number;
  readonly next: number;
}

/**
 * The scheduled fire time of the run that fires now: the latest time of the
 * schedule at or before `now`. The cron scheduler never fires before its time
 * (it waits again when woken early), so a replica whose run is late by less
 * than a period still computes the tick the others ran.
 */
export function tickOf(options: CronOptions, now = Date.now()): Tick {
  if (options.cronTime instanceof Date) return { at: options.cronTime.getTime(), next: Infinity };
  const time = cronTimeOf(options);
  const zone = zoneOf(time, options);
  const nextAfter = (ms: number) => time.getNextDateFrom(new Date(ms), zone).toMillis();
  // Step back until a fire time at or before now shows up, then forward to the last one.
  let at = Infinity;
  for (let back = 1000; at > now; back *= 2) {
    if (back > 400 * 86_400_000)
      throw new Error(`@Locked {tick}: the schedule '${String(options.cronTime)}' fired no time in the last year`);
    at = nextAfter(now - back);
  }
  for (let next = nextAfter(at); next <= now && next > at; next = nextAfter(at)) at = next;
  return { at, next: nextAfter(at) };
}

function cronTimeOf(options: CronOptions): CronTimeLike {
  if (!CronTime) {
    throw new Error("@Locked {tick} needs the 'cron' package (a dependency of @nestjs/schedule): install it beside @nestjs/schedule");
  }
  let time = times.get(options);
  if (!time) {
    time = new CronTime(options.cronTime, options.timeZone ?? null, options.utcOffset ?? null);
    times.set(options, time);
  }
  return time;
}

/** The zone the scheduler reads the expression in, as `CronTime.sendAt` does. */
function zoneOf(time: CronTimeLike, { timeZone, utcOffset }: CronOptions): string | undefined {
  if (utcOffset === undefined || utcOffset === null) return timeZone ?? time.timeZone;
  const hours = Math.trunc(utcOffset / 60);
  const minutes = Math.abs(utcOffset - hours * 60);
  return `UTC${utcOffset < 0 ? '-' : '+'}${String(Math.abs(hours)).padStart(2, '0')}:${String(minutes).padStart(2, '0')}`;
}
