import type { ResourceHolder, ResourceInspection } from '../core/index.js';

/** Who holds it, as a short phrase: ` by app / host / pid`, or nothing when no identity was recorded. */
export function holderName(i: Pick<ResourceInspection, 'identity'>): string {
  return i.identity ? ` by ${[i.identity.app, i.identity.host, i.identity.pid].filter((x) => x !== undefined).join(' / ')}` : '';
}

/** A permits' resource in words: `semaphore (limit 3)`, `read-write lock`. */
export function kindName(i: Pick<ResourceInspection, 'kind' | 'limit'>): string {
  return i.kind === 'rw' ? 'read-write lock' : i.kind === 'semaphore' ? `semaphore (limit ${i.limit})` : 'lock';
}

/** The head line of a semaphore or read-write lock: how many hold it, in which modes, and on a quorum or not. */
export function permitsHead(i: ResourceInspection): string {
  const held = i.holders.filter((h) => h.held).length;
  const modes =
    i.kind === 'rw' ? ` (${['write', 'read'].map((m) => `${i.holders.filter((h) => h.mode === m).length} ${m}`).join(', ')})` : '';
  return `${JSON.stringify(i.resource)} ${kindName(i)}: ${i.holders.length} holder(s)${modes}, ${held} HELD on a quorum (${i.quorum})`;
}

/** One line per holder of a semaphore or read-write lock, indented under its resource. */
export function holderLines(i: ResourceInspection): string[] {
  return i.holders.map(
    (h: ResourceHolder) =>
      `  ${h.mode ? `${h.mode.padEnd(5)} ` : ''}holder ${h.holder}${holderName(h)} ${h.held ? 'HELD' : 'partial'} on ${h.heldOn}/${i.nodes.length} nodes, ${h.ttl} ms left`,
  );
}
