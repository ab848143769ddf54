import { afterEach, describe, expect, it, jest } from '@jest/globals';
import { MAX_DELAY } from '../../lib/core/options.js';
import { defaultNodeTimeout, driftOf, quorumOf, retryDelayOf, validityOf } from '../../lib/core/quorum.js';

// Pure arithmetic: no server, no clock.
afterEach(() => void jest.restoreAllMocks());

describe('quorumOf', () => {
  it('is a strict majority of the nodes', () => {
    expect([1, 2, 3, 4, 5, 6, 7].map(quorumOf)).toEqual([1, 2, 2, 3, 3, 4, 4]);
  });

  it('leaves no two disjoint quorums', () => {
    for (let n = 1; n <= 9; n++) expect(2 * quorumOf(n)).toBeGreaterThan(n);
  });
});

describe('driftOf and validityOf', () => {
  it('allow ttl × driftFactor (rounded down) plus 2 ms of drift', () => {
    expect(driftOf(10_000, 0.01)).toBe(102);
    expect(driftOf(150, 0.01)).toBe(3);
    expect(driftOf(10_000, 0)).toBe(2);
  });

  it('take the round time and the drift off the ttl', () => {
    expect(validityOf(10_000, 30, 0.01)).toBe(10_000 - 30 - 102);
    expect(validityOf(10_000, 0, 0)).toBe(9_998);
  });

  it('go to zero or below when the round took about the whole ttl', () => {
    expect(validityOf(1_000, 988, 0.01)).toBe(0);
    expect(validityOf(1_000, 2_000, 0.01)).toBeLessThan(0);
  });
});

describe('defaultNodeTimeout', () => {
  it('is 1% of the ttl between 50 and 250 ms', () => {
    expect(defaultNodeTimeout(10_000)).toBe(100);
    expect(defaultNodeTimeout(12_345)).toBe(123);
    expect(defaultNodeTimeout(1_000)).toBe(50);
    expect(defaultNodeTimeout(60_000)).toBe(250);
    expect(defaultNodeTimeout(86_400_000)).toBe(250);
  });

  it('is at most a quarter of the ttl, and at least 1 ms', () => {
    expect(defaultNodeTimeout(100)).toBe(25);
    expect(defaultNodeTimeout(199)).toBe(49);
    expect(defaultNodeTimeout(4)).toBe(1);
    expect(defaultNodeTimeout(2)).toBe(1);
  });
});

describe('retryDelayOf', () => {
  const random = (value: number) => jest.spyOn(Math, 'random').mockReturnValue(value);

  it('adds a jitter in [0, jitter) to the delay', () => {
    random(0);
    expect(retryDelayOf(200, 100)).toBe(200);
    random(0.5);
    expect(retryDelayOf(200, 100)).toBe(250);
    random(0.999_999);
    expect(retryDelayOf(200, 100)).toBe(299);
  });

  it('is the delay itself without jitter', () => {
    random(0.7);
    expect(retryDelayOf(200, 0)).toBe(200);
  });

  it('stays within [delay, delay + jitter) with the real random source', () => {
    for (let i = 0; i < 200; i++) {
      const delay = retryDelayOf(10, 5);
      expect(Number.isInteger(delay)).toBe(true);
      expect(delay).toBeGreaterThanOrEqual(10);
      expect(delay).toBeLessThan(15);
    }
  });

  it('is never more than a timer takes', () => {
    random(0.999_999);
    expect(retryDelayOf(MAX_DELAY, 1_000)).toBe(MAX_DELAY);
  });
});
