import type { AcquirePlan } from './acquire-plan.js';
import type { NodeReport } from './outcome.js';
import { validityOf } from './quorum.js';
import { callRound, type NodeSet, type RoundResult } from './round.js';
import { acquireVerdict, doneVerdict, heldVerdict } from './verdicts.js';
import { packedMap } from './packed.js';

/** What one attempt came to. Either way, `sent` says which nodes its acquire went to. */
export type AttemptOutcome =
  | {
      readonly taken: true;
      readonly elapsed: number;
      /** Per node, with the fencing confirmation's answers where one was needed. */
      readonly reports: readonly NodeReport[];
      readonly validity: number;
      /** `performance.now()` time at which the lock stops being safe. */
      readonly expiresAt: number;
      /** The fencing token; undefined with fencing off. */
      readonly token: number | undefined;
      /** Some node refused when the round was decided: a waiter may be queued there. */
      readonly refused: boolean;
      /**
       * Nodes the acquire went to that have not said yes (see `RoundResult.unconfirmed`):
       * while any, a waiter may be queued there. For the release: a node still
       * silent at the decision may refuse (and queue the waiter) a moment later.
       */
      readonly unconfirmed: { readonly count: number };
      readonly sent: readonly boolean[];
    }
  | {
      readonly taken: false;
      readonly elapsed: number;
      /** Every node's answer (late ones included) when the first phase fell short; else as decided. */
      readonly reports: readonly NodeReport[];
      /** The first phase had a quorum of yes votes (the attempt failed on validity, the confirmation, or `wanted`). */
      readonly reachedQuorum: boolean;
      readonly sent: readonly boolean[];
    };

/**
 * One attempt: the acquire round, the fencing confirmation, and, when the lock
 * is not taken with a positive validity (or is no longer `wanted`: the call
 * was aborted, the client closed), the undo on every node it may have set keys on.
 */
export async function attemptAcquire(
  set: NodeSet,
  plan: AcquirePlan,
  driftFactor: number,
  wanted: () => boolean,
  attempt: number,
): Promise<AttemptOutcome> {
  const t0 = performance.now();
  const { nodes, quorum } = set;
  const round = await callRound(plan.acquire(attempt), acquireVerdict, {
    nodes,
    quorum,
    timeout: plan.nodeTimeout,
    until: 'quorum',
    // A NOSCRIPT answered after the node timeout gets no EVAL: the undo may be on its way.
    fallbackWithin: plan.nodeTimeout,
  });
  const reachedQuorum = round.yes.length >= quorum;
  const confirmed = reachedQuorum && plan.retention > 0 ? await confirmToken(set, plan, round) : undefined;
  const elapsed = performance.now() - t0;
  const validity = validityOf(plan.ttl, elapsed, driftFactor);
  const reports = confirmed?.reports ?? round.reports;
  const sent = round.sent;
  if (reachedQuorum && (confirmed?.ok ?? true) && validity > 0 && wanted()) {
    const refused = round.reports.some((r) => r.outcome === 'busy');
    return {
      taken: true,
      elapsed,
      reports,
      validity,
      expiresAt: t0 + elapsed + validity,
      token: confirmed?.token,
      refused,
      unconfirmed: round.unconfirmed,
      sent,
    };
  }
  const heard = await undo(set, plan, round);
  return { taken: false, elapsed, reports: reachedQuorum ? reports : heard, reachedQuorum, sent };
}

/**
 * Undoes an attempt wherever it may have set keys: first hears every node out
 * (those still pending at an early decision answer within moments, a hung one
 * within the node timeout), so that a node that said busy, and set nothing,
 * gets no undo. A node that timed out gets one too: a late SET must not
 * survive. Returns every node's answer to the attempt.
 */
async function undo(set: NodeSet, plan: AcquirePlan, round: RoundResult): Promise<readonly NodeReport[]> {
  await round.settled;
  const heard = round.late();
  const targets = packedMap(round.sent, (sent, i) => sent && heard[i]!.outcome !== 'busy');
  if (targets.includes(true)) {
    await callRound(plan.undo(), doneVerdict, { nodes: set.nodes, quorum: set.quorum, timeout: plan.nodeTimeout, until: 'all', targets });
  }
  return heard;
}

/**
 * Fencing phase 2. The token is the highest counter among the yes votes.
 * Nodes that returned it already store it; if they are a quorum, nothing is
 * sent (the usual case). Otherwise the token is written back, conditionally
 * on still holding the lock, to the other nodes until a quorum stores it.
 *
 * Why tokens grow: two successful acquisitions A and B each end with a
 * quorum of nodes storing their token, and two quorums share a node n. SET NX
 * makes their key lifetimes on n disjoint; say A's came first. A's counter on
 * n reached t(A) while A's key was there (the write-back is conditional on
 * it), so before B's acquire script ran on n, and that script raises the
 * counter: t(B) >= t(A) + 1. No assumption on clocks, pauses or delays.
 * Assumed: counters never go back (every acquisition raises them to at least
 * the acquiring client's clock in microseconds, the same value on every node,
 * which is also where a missing one is reborn; a majority
 * restarted without data inside the ttl, or a client clock behind the one
 * that issued the previous tokens, breaks it), scripts run once per value
 * (they are idempotent), and the node set does not change while locks are held.
 */
async function confirmToken(
  { nodes, quorum }: NodeSet,
  plan: AcquirePlan,
  round: RoundResult,
): Promise<{ ok: boolean; token: number; reports: readonly NodeReport[] }> {
  let token = 0;
  let agree = 0;
  for (const vote of round.yes) {
    if (vote.value > token) {
      token = vote.value;
      agree = 1;
    } else if (vote.value === token) agree++;
  }
  if (agree >= quorum) return { ok: true, token, reports: round.reports };
  const agreeing = new Set<number>();
  for (const vote of round.yes) if (vote.value === token) agreeing.add(vote.index);
  const others = nodes.filter((_, i) => !agreeing.has(i));
  const confirm = await callRound(plan.confirm(token), heldVerdict, {
    nodes: others,
    quorum: quorum - agreeing.size,
    timeout: plan.nodeTimeout,
    until: 'quorum',
  });
  const byLabel = new Map(packedMap(confirm.reports, (r) => [r.node, r]));
  const reports = packedMap(nodes, (node, i) => (agreeing.has(i) ? round.reports[i]! : byLabel.get(node.label)!));
  return { ok: agreeing.size + confirm.yes.length >= quorum, token, reports };
}
