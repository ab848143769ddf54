import { createHash } from 'node:crypto';
import { decodeIdentity, type HolderIdentity } from './holder.js';
import type { NodeReport } from './outcome.js';
import type { LockNode } from './node.js';
import { callRound, type NodeSet, type Verdict } from './round.js';
import { INSPECT, type InspectReply } from './scripts.js';

/** What one node says of a resource. */
export interface NodeInspection {
  /** `host:port/db`. */
  readonly node: string;
  readonly state: 'held' | 'free' | 'error' | 'timeout';
  /** Remaining ttl of the lock key on this node, ms. */
  readonly ttl?: number;
  /** A short fingerprint of the holder's value (not the value): equal on nodes held by the same lock. */
  readonly holder?: string;
  readonly fencingCounter?: number;
  readonly waiters?: number;
  readonly error?: string;
}

/** What the nodes say of a resource: who holds it, where, and for how long. */
export interface ResourceInspection {
  readonly resource: string;
  /** True when a quorum of nodes has the key of one holder. */
  readonly held: boolean;
  /** Fingerprint of the holder that has the most nodes. */
  readonly holder?: string;
  /** The identity that holder recorded (`identity` option), if any. */
  readonly identity?: HolderIdentity;
  /** Nodes that have the key of that holder. */
  readonly heldOn: number;
  readonly quorum: number;
  /** Smallest remaining ttl among the nodes holding it, ms. */
  readonly ttl?: number;
  readonly fencingCounter?: number;
  readonly waiters: number;
  readonly nodes: readonly NodeInspection[];
}

/**
 * A holder's fingerprint: the first 12 hex digits of its value's SHA-1 (a
 * script computes the same with `redis.sha1hex`, so a force-release can name
 * the holder it evicts). The value is random: its fingerprint says nothing of it.
 */
export function fingerprint(value: string): string {
  return createHash('sha1').update(value).digest('hex').slice(0, 12);
}

/** Sends INSPECT (`keys`: lock key, fence counter, queue) to every node and waits for all, at most `timeout` ms. */
export async function inspectNodes(set: NodeSet, resource: string, keys: readonly string[], timeout: number): Promise<ResourceInspection> {
  const replies = new Map<string, InspectReply>();
  const record = (reply: InspectReply, node: LockNode): Verdict => {
    replies.set(node.label, reply);
    return { outcome: 'ok' };
  };
  const round = await callRound(INSPECT.call(keys, undefined), record, { ...set, timeout, until: 'all' });
  return inspectionOf(resource, set.quorum, round.reports, replies);
}

/** Builds the inspection from each node's report in the round, and the replies of those that answered. */
export function inspectionOf(
  resource: string,
  quorum: number,
  reports: readonly NodeReport[],
  replies: ReadonlyMap<string, InspectReply>,
): ResourceInspection {
  const identities = new Map<string, HolderIdentity | undefined>();
  const nodes = reports.map((report): NodeInspection => {
    const reply = report.outcome === 'ok' ? replies.get(report.node) : undefined;
    if (!reply) return { node: report.node, state: report.outcome === 'error' ? 'error' : 'timeout', error: report.error };
    const { value, pttl, counter, waiters } = reply;
    const fencingCounter = counter === null ? undefined : Number(counter);
    if (value === null) return { node: report.node, state: 'free', fencingCounter, waiters };
    const holder = fingerprint(value);
    identities.set(holder, decodeIdentity(value));
    return { node: report.node, state: 'held', ttl: pttl, holder, fencingCounter, waiters };
  });
  const byHolder = new Map<string, NodeInspection[]>();
  for (const n of nodes) if (n.holder) byHolder.set(n.holder, [...(byHolder.get(n.holder) ?? []), n]);
  const [holder, on] = [...byHolder].sort((a, b) => b[1].length - a[1].length)[0] ?? [undefined, []];
  const counters = nodes.map((n) => n.fencingCounter ?? 0);
  return {
    resource,
    held: on.length >= quorum,
    holder,
    identity: holder ? identities.get(holder) : undefined,
    heldOn: on.length,
    quorum,
    ttl: on.length ? Math.min(...on.map((n) => n.ttl ?? 0)) : undefined,
    fencingCounter: counters.some((c) => c > 0) ? Math.max(...counters) : undefined,
    waiters: Math.max(0, ...nodes.map((n) => n.waiters ?? 0)),
    nodes,
  };
}
