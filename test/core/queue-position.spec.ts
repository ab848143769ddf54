import { afterEach, describe, expect, it, jest } from '@jest/globals';
import { queuePosition } from '../../lib/core/queue-position.js';

// The wall clock is what processes (and hosts) share; these tests set it by hand.
const wallClock = (ms: number) => jest.spyOn(Date, 'now').mockReturnValue(ms);
afterEach(() => void jest.restoreAllMocks());

describe('queue position', () => {
  it("is the wall clock, whatever this process's performance clock says", () => {
    wallClock(2_000_000_000_000);
    expect(queuePosition()).toBe(2_000_000_000_000);
    wallClock(2_000_000_000_005);
    expect(queuePosition()).toBe(2_000_000_000_005);
  });

  it('keeps call order within one millisecond, 1 µs apart', () => {
    wallClock(2_100_000_000_000);
    const positions = [queuePosition(), queuePosition(), queuePosition()];
    expect(positions).toEqual([2_100_000_000_000, 2_100_000_000_000.001, 2_100_000_000_000.002]);
    // The digits survive the trip to the nodes as a string.
    expect(String(positions[2])).toBe('2100000000000.002');
  });

  it('follows a clock stepped back, instead of queueing this process behind everyone', () => {
    wallClock(2_200_000_000_000);
    queuePosition();
    wallClock(2_199_999_999_000); // one second back
    expect(queuePosition()).toBe(2_199_999_999_000);
  });
});
