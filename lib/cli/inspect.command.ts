import type { ResourceInspection } from '../core/index.js';
import type { CommandRun } from './main.js';

/** `nest-redlock inspect <resource>`: 1 when fewer than a quorum of nodes answered. */
export async function inspectCommand({ args, values, redlock, print }: CommandRun): Promise<number> {
  const inspection = await redlock.inspect(args[0]!);
  print(values.json ? JSON.stringify(inspection, null, 2) : renderInspection(inspection));
  const answered = inspection.nodes.filter((n) => n.state === 'held' || n.state === 'free').length;
  return answered >= inspection.quorum ? 0 : 1;
}

/** Who holds it, as a short phrase: ` by app / host / pid`, or nothing when no identity was recorded. */
export function holderName(i: Pick<ResourceInspection, 'identity'>): string {
  return i.identity ? ` by ${[i.identity.app, i.identity.host, i.identity.pid].filter((x) => x !== undefined).join(' / ')}` : '';
}

function renderInspection(i: ResourceInspection): string {
  const head = i.held
    ? `${JSON.stringify(i.resource)} is HELD${holderName(i)} (holder ${i.holder}) on ${i.heldOn}/${i.nodes.length} nodes (quorum ${i.quorum}), ${i.ttl} ms left`
    : `${JSON.stringify(i.resource)} is not held by a quorum (${i.heldOn}/${i.nodes.length} nodes have one holder's key, quorum ${i.quorum})`;
  const rows = i.nodes.map(
    (n) =>
      `  ${n.node.padEnd(24)} ${n.state.padEnd(8)} ${n.ttl !== undefined ? `${n.ttl} ms`.padEnd(10) : ''.padEnd(10)} ${n.holder ?? ''}${n.error ? ` ${n.error}` : ''}`,
  );
  const tail = `fencing counter: ${i.fencingCounter ?? '-'}; waiters: ${i.waiters}`;
  return [head, ...rows, tail].join('\n');
}
