import { describe, expect, it } from '@jest/globals';
import { judgeAttempt, nextStep, SPLIT_RETRIES } from '../../lib/core/judgement.js';
import type { NodeOutcome, NodeReport } from '../../lib/core/outcome.js';

const reports = (...outcomes: NodeOutcome[]): NodeReport[] => outcomes.map((outcome, i) => ({ node: `n${i}`, outcome }));

describe('judging a failed acquire attempt', () => {
  it('a split vote (3 replicas, 3 of 5 nodes up, one yes each) is busy, split and retryable (issue 18.17)', () => {
    expect(judgeAttempt(reports('ok', 'busy', 'busy', 'error', 'error'), 3, false)).toEqual({ kind: 'busy', split: true, retryable: true });
  });

  it('a quorum of refusals is a holder elsewhere, not a split', () => {
    expect(judgeAttempt(reports('busy', 'busy', 'busy', 'error', 'error'), 3, false)).toEqual({
      kind: 'busy',
      split: false,
      retryable: true,
    });
    expect(judgeAttempt(reports('busy', 'busy', 'ok'), 2, false)).toMatchObject({ kind: 'busy', split: false });
  });

  it('a node the restart guard excludes counts as a refusal: an amnesiac node cannot make a split', () => {
    expect(judgeAttempt(reports('busy', 'busy', 'excluded', 'ok', 'ok'), 3, false)).toMatchObject({ kind: 'busy', split: false });
  });

  it('too few answers is unreachable: refused connections are not retried, timeouts are', () => {
    expect(judgeAttempt(reports('ok', 'error', 'error'), 2, false)).toEqual({ kind: 'unreachable', split: false, retryable: false });
    expect(judgeAttempt(reports('ok', 'timeout', 'error'), 2, false)).toEqual({ kind: 'unreachable', split: false, retryable: true });
  });

  it('a round that reached a quorum too late is retried', () => {
    expect(judgeAttempt(reports('ok', 'ok', 'pending'), 2, true)).toMatchObject({ retryable: true });
  });
});

describe('the step after a failed attempt', () => {
  const busy = { kind: 'busy', split: false, retryable: true } as const;
  const split = { ...busy, split: true } as const;
  const refused = { kind: 'unreachable', split: false, retryable: false } as const;

  it("retries within the caller's retry count, and gives up past it", () => {
    expect(nextStep(busy, 1, 3)).toBe('retry');
    expect(nextStep(busy, 3, 3)).toBe('retry');
    expect(nextStep(busy, 4, 3)).toBe('give-up');
    expect(nextStep(busy, 1, 0)).toBe('give-up');
  });

  it('never retries what a retry cannot change (refused connections)', () => {
    expect(nextStep(refused, 1, 3)).toBe('give-up');
  });

  it("gives a split vote a few brief retries past the caller's own, then gives up", () => {
    expect(nextStep(split, 2, 3)).toBe('retry');
    expect(nextStep(split, 4, 3)).toBe('split-retry');
    expect(nextStep(split, 3 + SPLIT_RETRIES, 3)).toBe('split-retry');
    expect(nextStep(split, 4 + SPLIT_RETRIES, 3)).toBe('give-up');
    expect(nextStep(split, 1, 0)).toBe('split-retry');
  });
});
