import { InvalidArgumentError } from './errors/invalid-argument.error.js';
import { QuorumUnreachableError } from './errors/quorum-unreachable.error.js';
import { decodeIdentity, type HolderIdentity } from './holder.js';
import { inspectKeys, inspectNodes, type ResourceKind } from './inspection.js';
import type { KeyLayout } from './keys.js';
import { formatResources } from './log-safe.js';
import type { NodeReport } from './outcome.js';
import { describeKind } from './permit.js';
import { callRound, type NodeSet } from './round.js';
import { FORCE_RELEASE, type ForceReleaseReply } from './operator-scripts.js';

/** Options of `Redlock.forceRelease`. */
export interface ForceReleaseOptions {
  /**
   * Evict only this holder: its fingerprint, as `inspect` and `list` show it.
   * A node where another holder has the resource by now is left alone.
   * Required for a semaphore or read-write lock with several holders: one
   * permit is evicted, never all of them.
   */
  readonly holder?: string;
}

/** What a force-release did. */
export interface ForceReleaseResult {
  readonly resource: string;
  /** Nodes whose lock key was deleted. */
  readonly releasedOn: number;
  /** Nodes left alone: another holder than `options.holder` had the resource (or, no holder named, several permits' holders). */
  readonly otherHolderOn: number;
  /** A majority: the nodes that must answer. */
  readonly quorum: number;
  /** How the resource was held, as most nodes that had it said. */
  readonly kind?: ResourceKind;
  /** Fingerprint of the holder evicted, the identity it recorded, and (a read-write lock) its permit's mode. */
  readonly holder?: string;
  readonly identity?: HolderIdentity;
  readonly mode?: 'read' | 'write';
  /**
   * The resource's fencing counter after the release (fencing on; not when
   * another holder kept the resource everywhere, which raises none): above the
   * evicted holder's token, and below the next holder's. A fenced store that
   * has been accessed with it, or with the next holder's token, refuses the
   * evicted holder's writes.
   */
  readonly fencingToken?: number;
  readonly nodes: readonly NodeReport[];
}

/** What the force-release of a client takes from it. */
export interface ForceReleaseContext {
  readonly set: NodeSet;
  readonly layout: KeyLayout;
  readonly wakePrefix: string;
  /** Counters are kept this long, ms; 0: fencing off. */
  readonly retention: number;
  readonly timeout: number;
}

export function checkHolder(holder: unknown): string | undefined {
  if (holder === undefined) return undefined;
  if (typeof holder !== 'string' || !/^[0-9a-f]{12}$/.test(holder)) {
    throw new InvalidArgumentError('holder', 'a holder fingerprint of 12 hex digits, as inspect and list show it', holder);
  }
  return holder;
}

/**
 * Evicts one holder of `resource` (see `FORCE_RELEASE`): a mutex's key on
 * every node whoever holds it, or one permit; wakes the waiters it makes room
 * for and raises the fencing counter. With no holder named, a semaphore or
 * read-write lock is inspected first, and its only holder named (several:
 * `InvalidArgumentError`, nothing done). Waits for every node (up to the node
 * timeout) so that the raise reached all it could; rejects with
 * `QuorumUnreachableError` when fewer than a quorum answered.
 */
export async function forceRelease(ctx: ForceReleaseContext, resource: string, named?: string): Promise<ForceReleaseResult> {
  const { set, layout, retention } = ctx;
  const holder = named ?? (await soleHolder(ctx, resource));
  const replies: ForceReleaseReply[] = [];
  const keys = [...inspectKeys(layout, resource).slice(0, 3), layout.queueDeadlines(resource), layout.kind(resource)];
  const fencing = retention > 0 ? { floor: Date.now() * 1000, retention } : undefined;
  const call = FORCE_RELEASE.call(keys, { holder, fencing, wakePrefix: ctx.wakePrefix, prefixLength: layout.prefixLength });
  const round = await callRound(call, (reply) => (replies.push(reply), { outcome: 'ok' }), {
    ...set,
    timeout: ctx.timeout,
    until: 'all',
  });
  const released = replies.filter((r) => r.outcome === 'released');
  if (round.yes.length < set.quorum) {
    // The nodes that answered did evict: an operator must know the holder now holds fewer nodes.
    const evicted = released.length;
    throw new QuorumUnreachableError(
      'force-release',
      [resource],
      [{ attempt: 1, elapsed: round.elapsed, nodes: round.reports }],
      set.quorum,
      evicted > 0
        ? `the holder was evicted on ${evicted} of ${set.nodes.length} nodes all the same (those that answered); on the others its keys stay until their ttl ends`
        : undefined,
    );
  }
  // The counters raised (a node with another holder raises none): none raised, no token to report.
  const counters = replies.flatMap((r) => (r.counter === undefined ? [] : [r.counter]));
  const evicted = released[0];
  const kind = kindOfReplies(replies);
  return {
    resource,
    releasedOn: released.length,
    otherHolderOn: replies.filter((r) => r.outcome === 'other-holder' || r.outcome === 'several').length,
    quorum: set.quorum,
    kind,
    holder: evicted?.holder,
    identity: evicted?.identity === undefined ? undefined : decodeIdentity(evicted.identity),
    mode: evicted && kind === 'rw' ? (evicted.writer ? 'write' : 'read') : undefined,
    fencingToken: fencing && counters.length > 0 ? Math.max(...counters) : undefined,
    nodes: round.reports,
  };
}

/**
 * No holder named: a mutex's holder, whoever it is, is evicted (undefined);
 * a permits' resource must have one holder, which is then named, so that no
 * node evicts another permit than the others do.
 */
async function soleHolder(ctx: ForceReleaseContext, resource: string): Promise<string | undefined> {
  const seen = await inspectNodes(ctx.set, ctx.layout, resource, ctx.timeout);
  if (seen.kind === undefined || seen.kind === 'mutex') return undefined;
  if (seen.holders.length === 1) return seen.holders[0]!.holder;
  const shown = seen.holders.slice(0, 10).map((h) => h.holder + (h.mode ? ` (${h.mode})` : ''));
  const what = seen.kind === 'rw' ? describeKind('rw') : describeKind(String(seen.limit));
  throw new InvalidArgumentError(
    'holder',
    `the fingerprint of the holder to evict: ${formatResources([resource])} is a ${what} with ${seen.holders.length} holders (${shown.join(', ')}${seen.holders.length > 10 ? ', …' : ''})`,
    undefined,
  );
}

/** The kind most replies that found a key report. */
function kindOfReplies(replies: readonly ForceReleaseReply[]): ResourceKind | undefined {
  const votes = new Map<string, number>();
  for (const r of replies) if (r.kind) votes.set(r.kind, (votes.get(r.kind) ?? 0) + 1);
  const top = [...votes].sort((a, b) => b[1] - a[1])[0]?.[0];
  return top === undefined ? undefined : top === 'mutex' || top === 'rw' ? top : 'semaphore';
}
