import { beforeAll, describe, expect, it } from '@jest/globals';
import { loadCron, tickOf } from '../../lib/nest/schedule-tick.js';

const at = (iso: string) => Date.parse(iso);

beforeAll(async () => {
  expect(await loadCron()).toBe(true);
});

describe('tickOf', () => {
  it('is the latest fire time at or before now, and the next one', () => {
    const every15min = { cronTime: '0 */15 * * * *', timeZone: 'UTC' };
    expect(tickOf(every15min, at('2026-03-01T12:07:30.250Z'))).toEqual({
      at: at('2026-03-01T12:00:00Z'),
      next: at('2026-03-01T12:15:00Z'),
    });
    expect(tickOf(every15min, at('2026-03-01T12:15:00.000Z')).at).toBe(at('2026-03-01T12:15:00Z'));
    expect(tickOf(every15min, at('2026-03-01T12:14:59.999Z')).at).toBe(at('2026-03-01T12:00:00Z'));
  });

  it('reads the expression in the time zone or UTC offset of the @Cron options', () => {
    const daily2am = (zone: object) => tickOf({ cronTime: '0 0 2 * * *', ...zone }, at('2026-03-01T12:00:00Z')).at;
    expect(daily2am({ timeZone: 'UTC' })).toBe(at('2026-03-01T02:00:00Z'));
    expect(daily2am({ timeZone: 'Asia/Tokyo' })).toBe(at('2026-02-28T17:00:00Z'));
    expect(daily2am({ utcOffset: -300 })).toBe(at('2026-03-01T07:00:00Z'));
  });

  it('finds a tick far back (a monthly job) in a few steps', () => {
    expect(tickOf({ cronTime: '0 0 0 1 * *', timeZone: 'UTC' }, at('2026-03-20T00:00:00Z')).at).toBe(at('2026-03-01T00:00:00Z'));
  });
});
