import { InvalidArgumentError } from './errors/invalid-argument.error.js';
import { QuorumUnreachableError } from './errors/quorum-unreachable.error.js';
import { decodeIdentity, type HolderIdentity } from './holder.js';
import type { KeyLayout } from './keys.js';
import type { NodeReport } from './outcome.js';
import { callRound, type NodeSet } from './round.js';
import { FORCE_RELEASE, type ForceReleaseReply } from './operator-scripts.js';

/** Options of `Redlock.forceRelease`. */
export interface ForceReleaseOptions {
  /**
   * Evict only this holder: its fingerprint, as `inspect` and `list` show it.
   * A node where another holder has the resource by now is left alone.
   */
  readonly holder?: string;
}

/** What a force-release did. */
export interface ForceReleaseResult {
  readonly resource: string;
  /** Nodes whose lock key was deleted. */
  readonly releasedOn: number;
  /** Nodes left alone because another holder than `options.holder` had the resource. */
  readonly otherHolderOn: number;
  readonly quorum: number;
  /** Fingerprint of the holder evicted, and the identity it recorded. */
  readonly holder?: string;
  readonly identity?: HolderIdentity;
  /**
   * The resource's fencing counter after the release (fencing on): above the
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
 * Deletes `resource`'s lock key on every node whoever holds it, wakes its
 * first waiter and raises its fencing counter (see `FORCE_RELEASE`). Waits for
 * every node (up to the node timeout) so that the raise reached all it could;
 * rejects with `QuorumUnreachableError` when fewer than a quorum answered.
 */
export async function forceRelease(ctx: ForceReleaseContext, resource: string, holder?: string): Promise<ForceReleaseResult> {
  const { set, layout, retention } = ctx;
  const replies: ForceReleaseReply[] = [];
  const keys = [layout.lock(resource), layout.fence(resource), layout.queue(resource)];
  const fencing = retention > 0 ? { floor: Date.now() * 1000, retention } : undefined;
  const call = FORCE_RELEASE.call(keys, { holder, fencing, wakePrefix: ctx.wakePrefix });
  const round = await callRound(call, (reply) => (replies.push(reply), { outcome: 'ok' }), {
    ...set,
    timeout: ctx.timeout,
    until: 'all',
  });
  if (round.yes.length < set.quorum) {
    throw new QuorumUnreachableError(
      'force-release',
      [resource],
      [{ attempt: 1, elapsed: round.elapsed, nodes: round.reports }],
      set.quorum,
    );
  }
  const released = replies.filter((r) => r.outcome === 'released');
  const counters = replies.map((r) => r.counter ?? 0);
  const evicted = released[0];
  return {
    resource,
    releasedOn: released.length,
    otherHolderOn: replies.filter((r) => r.outcome === 'other-holder').length,
    quorum: set.quorum,
    holder: evicted?.holder,
    identity: evicted?.identity === undefined ? undefined : decodeIdentity(evicted.identity),
    fencingToken: fencing ? Math.max(...counters) : undefined,
    nodes: round.reports,
  };
}
