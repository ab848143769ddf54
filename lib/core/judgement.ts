import type { NodeReport } from './outcome.js';

/** What a failed acquire attempt means, from every node's answer. */
export interface Judgement {
  /**
   * `busy`: enough nodes answered and some refused for another holder;
   * `unreachable`: too few nodes answered for a quorum at all.
   */
  readonly kind: 'busy' | 'unreachable';
  /**
   * A split vote: the refusals alone (with the nodes the restart guard
   * excludes, which may have lost a holder's key) are fewer than a quorum, so
   * among the nodes that answered nobody holds the resource. Contenders that each took
   * a minority (replicas firing the same cron tick with some nodes down) then
   * undo; a brief jittered retry lets one of them through, where giving up
   * would leave the tick to nobody.
   */
  readonly split: boolean;
  /**
   * Worth another attempt: a busy resource, a round that reached a quorum but
   * too late, or nodes that timed out. Nodes that refused the connection will
   * refuse the retry too.
   */
  readonly retryable: boolean;
}

/**
 * Judges a failed attempt. `reachedQuorum`: the first phase had a quorum of
 * yes votes (the attempt failed on validity or on the fencing confirmation).
 */
export function judgeAttempt(reports: readonly NodeReport[], quorum: number, reachedQuorum: boolean): Judgement {
  let busy = 0;
  let excluded = 0;
  let answered = 0;
  let timedOut = false;
  for (const { outcome } of reports) {
    if (outcome === 'busy') busy++;
    if (outcome === 'excluded') excluded++;
    if (outcome === 'busy' || outcome === 'ok' || outcome === 'excluded') answered++;
    if (outcome === 'timeout') timedOut = true;
  }
  const heldElsewhere = busy > 0 && answered >= quorum;
  return {
    kind: heldElsewhere ? 'busy' : 'unreachable',
    // A node the restart guard excludes may have lost a holder's key: it counts as a refusal.
    split: heldElsewhere && busy + excluded < quorum,
    retryable: heldElsewhere || reachedQuorum || timedOut,
  };
}

/** Retries of a split vote past the caller's own, and their jitter, ms. */
export const SPLIT_RETRIES = 5;
export const SPLIT_JITTER = 50;

/**
 * What the loop does after failed attempt number `attempt` (1 for the first):
 * `retry` within the caller's `retryCount`; `split-retry`, a brief jittered
 * one past them for a split vote (at most SPLIT_RETRIES); or `give-up`.
 */
export function nextStep(judged: Judgement, attempt: number, retryCount: number): 'retry' | 'split-retry' | 'give-up' {
  if (!judged.retryable) return 'give-up';
  if (attempt <= retryCount) return 'retry';
  return judged.split && attempt <= retryCount + SPLIT_RETRIES ? 'split-retry' : 'give-up';
}
