import { createHash } from 'node:crypto';
import { decodeIdentity, type HolderIdentity } from './holder.js';

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

export function fingerprint(value: string): string {
  return createHash('sha256').update(value).digest('hex').slice(0, 12);
}

/** Builds the inspection from each node's raw answer (value, pttl, counter, waiters) or failure. */
export function inspectionOf(
  resource: string,
  quorum: number,
  answers: readonly ({ node: string; reply?: [string | null, number, string | null, number]; error?: string; timeout?: boolean })[],
): ResourceInspection {
  const identities = new Map<string, HolderIdentity | undefined>();
  const nodes = answers.map((a): NodeInspection => {
    if (!a.reply) return { node: a.node, state: a.timeout ? 'timeout' : 'error', error: a.error };
    const [value, pttl, counter, waiters] = a.reply;
    const fencingCounter = counter === null ? undefined : Number(counter);
    if (value === null) return { node: a.node, state: 'free', fencingCounter, waiters };
    const holder = fingerprint(value);
    identities.set(holder, decodeIdentity(value));
    return { node: a.node, state: 'held', ttl: pttl, holder, fencingCounter, waiters };
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
