import { createHash } from 'node:crypto';
import { QuorumUnreachableError } from './errors/quorum-unreachable.error.js';
import { decodeIdentity, type HolderIdentity } from './holder.js';
import type { KeyLayout } from './keys.js';
import type { NodeReport } from './outcome.js';
import type { LockNode } from './node.js';
import { INSPECT, type InspectReply } from './operator-scripts.js';
import { callRound, type NodeSet, type Verdict } from './round.js';

/** How a resource is held: a mutex, a semaphore (`limit`) or a read-write lock (`mode`). */
export type ResourceKind = 'mutex' | 'semaphore' | 'rw';

/** One holder of a resource on one node. */
export interface NodeHolder {
  /** A short fingerprint of the holder's value (not the value): equal on the nodes one holder is on. */
  readonly holder: string;
  /** Remaining ttl of its lock key (a mutex) or of its permit on this node, ms. */
  readonly ttl: number;
  /** A read-write lock's permit: `read` or `write`. */
  readonly mode?: 'read' | 'write';
}

/** What one node says of a resource. */
export interface NodeInspection {
  /** `host:port/db`. */
  readonly node: string;
  readonly state: 'held' | 'free' | 'error' | 'timeout';
  /** How this node holds it (`held`). */
  readonly kind?: ResourceKind;
  /** Every holder on this node: a mutex's one, or every live permit. */
  readonly holders?: readonly NodeHolder[];
  /** The holder and its remaining ttl, ms, when this node has one holder (a mutex always). */
  readonly ttl?: number;
  readonly holder?: string;
  readonly fencingCounter?: number;
  readonly waiters?: number;
  readonly error?: string;
}

/** One holder of a resource, over the nodes. */
export interface ResourceHolder {
  readonly holder: string;
  /** The identity it recorded (`identity` option), if any. */
  readonly identity?: HolderIdentity;
  /** A read-write lock's permit: `read` or `write`. */
  readonly mode?: 'read' | 'write';
  /** Nodes it is on, and whether that is a quorum. */
  readonly heldOn: number;
  readonly held: boolean;
  /** Smallest remaining ttl among those nodes, ms. */
  readonly ttl: number;
}

/** What the nodes say of a resource: who holds it, where, and for how long. */
export interface ResourceInspection {
  readonly resource: string;
  /** How it is held, as most holding nodes say; absent when no node holds it. */
  readonly kind?: ResourceKind;
  /** A semaphore's limit. */
  readonly limit?: number;
  /** True when a holder is on a quorum of nodes. */
  readonly held: boolean;
  /** Every holder seen on any node, the most nodes first: a mutex's one, or each permit's holder. */
  readonly holders: readonly ResourceHolder[];
  /** The first of `holders`: its fingerprint, identity, nodes and ttl. */
  readonly holder?: string;
  readonly identity?: HolderIdentity;
  readonly heldOn: number;
  readonly ttl?: number;
  /** Votes a holder needs: a majority (a semaphore's permit is one of its slots, held on a majority). */
  readonly quorum: number;
  readonly fencingCounter?: number;
  readonly waiters: number;
  readonly nodes: readonly NodeInspection[];
}

/**
 * A holder's fingerprint: the first 12 hex digits of its value's SHA-1 (the
 * operators' scripts compute the same with `redis.sha1hex`, so that no value
 * leaves the nodes). The value is random: its fingerprint says nothing of it.
 */
export function fingerprint(value: string): string {
  return createHash('sha1').update(value).digest('hex').slice(0, 12);
}

/** INSPECT's keys for `resource`. */
export function inspectKeys(layout: KeyLayout, resource: string): string[] {
  return [layout.lock(resource), layout.fence(resource), layout.queue(resource), layout.kind(resource), layout.queueDeadlines(resource)];
}

/** Sends INSPECT to every node and waits for all, at most `timeout` ms. */
export async function inspectNodes(set: NodeSet, layout: KeyLayout, resource: string, timeout: number): Promise<ResourceInspection> {
  return (await inspectRound(set, layout, resource, timeout)).inspection;
}

/**
 * `Redlock.inspect`: as `inspectNodes`, but rejects with `QuorumUnreachableError`
 * when fewer nodes answered than a holder needs (a majority), as `list` does: no
 * holder could then be seen on a quorum, and `held: false` would read as "free".
 */
export async function inspectResource(set: NodeSet, layout: KeyLayout, resource: string, timeout: number): Promise<ResourceInspection> {
  const { inspection, round } = await inspectRound(set, layout, resource, timeout);
  if (round.yes.length < set.quorum) {
    throw new QuorumUnreachableError('inspect', [resource], [{ attempt: 1, elapsed: round.elapsed, nodes: round.reports }], set.quorum);
  }
  return inspection;
}

async function inspectRound(set: NodeSet, layout: KeyLayout, resource: string, timeout: number) {
  const replies = new Map<string, InspectReply>();
  const record = (reply: InspectReply, node: LockNode): Verdict => {
    replies.set(node.label, reply);
    return { outcome: 'ok' };
  };
  const call = INSPECT.call(inspectKeys(layout, resource), { prefixLength: layout.prefixLength });
  const round = await callRound(call, record, { ...set, timeout, until: 'all' });
  return { inspection: inspectionOf(resource, set.quorum, round.reports, replies), round };
}

/** A node's kind as stored ('mutex', '3', 'rw'; '' for permits without a kind key) in the public words. */
function kindOf(stored: string | undefined): { kind?: ResourceKind; limit?: number } {
  if (stored === undefined || stored === '') return {};
  if (stored === 'mutex' || stored === 'rw') return { kind: stored };
  return { kind: 'semaphore', limit: Number(stored) };
}

function nodeInspection(report: NodeReport, reply: InspectReply | undefined): NodeInspection {
  if (!reply) return { node: report.node, state: report.outcome === 'error' ? 'error' : 'timeout', error: report.error };
  const fencingCounter = reply.counter === null ? undefined : Number(reply.counter);
  const { waiters } = reply;
  if (reply.holders.length === 0) return { node: report.node, state: 'free', fencingCounter, waiters };
  const { kind } = kindOf(reply.kind);
  const holders = reply.holders.map(({ holder, ttl, writer }) =>
    kind === 'rw' ? { holder, ttl, mode: writer ? ('write' as const) : ('read' as const) } : { holder, ttl },
  );
  const one = holders.length === 1 ? holders[0] : undefined;
  return { node: report.node, state: 'held', kind, holders, holder: one?.holder, ttl: one?.ttl, fencingCounter, waiters };
}

/** The kind most holding nodes report. */
function mergedKind(nodes: readonly NodeInspection[], replies: ReadonlyMap<string, InspectReply>) {
  const votes = new Map<string, number>();
  for (const n of nodes) {
    const stored = n.state === 'held' ? replies.get(n.node)?.kind : undefined;
    if (stored) votes.set(stored, (votes.get(stored) ?? 0) + 1);
  }
  return kindOf([...votes].sort((a, b) => b[1] - a[1])[0]?.[0]);
}

/** Builds the inspection from each node's report in the round, and the replies of those that answered. */
export function inspectionOf(
  resource: string,
  majority: number,
  reports: readonly NodeReport[],
  replies: ReadonlyMap<string, InspectReply>,
): ResourceInspection {
  const nodes = reports.map((report) => nodeInspection(report, report.outcome === 'ok' ? replies.get(report.node) : undefined));
  const { kind, limit } = mergedKind(nodes, replies);
  const quorum = majority;
  const identities = new Map<string, string | undefined>();
  for (const reply of replies.values()) for (const h of reply.holders) identities.set(h.holder, h.identity);
  const seen = new Map<string, NodeHolder[]>();
  for (const n of nodes) for (const h of n.holders ?? []) seen.set(h.holder, [...(seen.get(h.holder) ?? []), h]);
  const holders = [...seen]
    .map(([holder, on]): ResourceHolder => {
      const identity = identities.get(holder);
      return {
        holder,
        identity: identity === undefined ? undefined : decodeIdentity(identity),
        mode: on[0]!.mode,
        heldOn: on.length,
        held: on.length >= quorum,
        ttl: Math.min(...on.map((h) => h.ttl)),
      };
    })
    .sort((a, b) => b.heldOn - a.heldOn || (a.holder < b.holder ? -1 : 1));
  const first = holders[0];
  const counters = nodes.map((n) => n.fencingCounter ?? 0);
  return {
    resource,
    kind,
    limit,
    held: holders.some((h) => h.held),
    holders,
    holder: first?.holder,
    identity: first?.identity,
    heldOn: first?.heldOn ?? 0,
    ttl: first?.ttl,
    quorum,
    fencingCounter: counters.some((c) => c > 0) ? Math.max(...counters) : undefined,
    waiters: Math.max(0, ...nodes.map((n) => n.waiters ?? 0)),
    nodes,
  };
}
