import { describe, expect, it } from '@jest/globals';
import { judgeAttempt } from '../../lib/core/judgement.js';
import type { NodeOutcome, NodeReport } from '../../lib/core/outcome.js';

const reports = (...outcomes: NodeOutcome[]): NodeReport[] => outcomes.map((outcome, i) => ({ node: `n${i}`, outcome }));

describe('judging a failed acquire attempt', () => {
  it('a split vote (3 replicas, 3 of 5 nodes up, one yes each) is busy, split and retryable (issue 18.17)', () => {
    expect(judgeAttempt(reports('ok', 'busy', 'busy', 'error', 'error'), 3, false)).toEqual({ kind: 'busy', split: true, retryable: true });
  });

  it('a quorum of refusals is a holder elsewhere, not a split', () => {
    expect(judgeAttempt(reports('busy', 'busy', 'busy', 'error', 'error'), 3, false)).toEqual({ kind: 'busy', split: false, retryable: true });
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
