import type { NodeInspection, ResourceInspection } from '../core/index.js';
import { holderLines, holderName, permitsHead } from './holders.js';
import type { CommandRun } from './main.js';

/** `nest-redlock inspect <resource>`: 1 when fewer than a quorum of nodes answered. */
export async function inspectCommand({ args, values, redlock, print }: CommandRun): Promise<number> {
  const inspection = await redlock.inspect(args[0]!);
  print(values.json ? JSON.stringify(inspection, null, 2) : renderInspection(inspection));
  const answered = inspection.nodes.filter((n) => n.state === 'held' || n.state === 'free').length;
  return answered >= inspection.quorum ? 0 : 1;
}

function renderInspection(i: ResourceInspection): string {
  const permits = i.kind === 'semaphore' || i.kind === 'rw';
  const head = permits
    ? [permitsHead(i), ...holderLines(i)]
    : i.held
      ? [
          `${JSON.stringify(i.resource)} is HELD${holderName(i)} (holder ${i.holder}) on ${i.heldOn}/${i.nodes.length} nodes (quorum ${i.quorum}), ${i.ttl} ms left`,
        ]
      : [
          `${JSON.stringify(i.resource)} is not held by a quorum (${i.heldOn}/${i.nodes.length} nodes have one holder's key, quorum ${i.quorum})`,
        ];
  const tail = `fencing counter: ${i.fencingCounter ?? '-'}; waiters: ${i.waiters}`;
  return [...head, ...i.nodes.map(nodeRow), tail].join('\n');
}

function nodeRow(n: NodeInspection): string {
  const ttl = n.ttl !== undefined ? `${n.ttl} ms` : '';
  // A node with several permits shows their holders, not one ttl.
  const who = n.holder ?? (n.holders?.length ? `${n.holders.length} permits: ${n.holders.map((h) => h.holder).join(' ')}` : '');
  return `  ${n.node.padEnd(24)} ${n.state.padEnd(8)} ${ttl.padEnd(10)} ${who}${n.error ? ` ${n.error}` : ''}`;
}
